from django.urls import path

from labs import views

app_name = "labs"

urlpatterns = [
    path("", views.lab_index, name="index"),
    path("<slug:lab_slug>/", views.lab_detail, name="lab"),
]
