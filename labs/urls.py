from django.urls import path

from labs import views

app_name = "labs"

urlpatterns = [
    path("", views.lab_index, name="index"),
    path("queue/", views.queue_dashboard, name="queue"),
    path("compare/", views.compare, name="compare"),
    path("runs/<int:run_id>/", views.run_detail, name="run"),
    path("runs/<int:run_id>/status/", views.run_status, name="run-status"),
    path("runs/<int:run_id>/cancel/", views.run_cancel, name="run-cancel"),
    path("runs/<int:run_id>/export.csv", views.run_export_csv, name="run-csv"),
    path("runs/<int:run_id>/export.json", views.run_export_json, name="run-json"),
    path("<slug:lab_slug>/", views.lab_detail, name="lab"),
    path("<slug:lab_slug>/cohort/", views.cohort, name="cohort"),
]
