from django.contrib.auth import views as auth_views
from django.urls import path, reverse_lazy

from accounts import views

app_name = "accounts"

urlpatterns = [
    path("signup/", views.signup, name="signup"),
    path("me/", views.me, name="me"),
    path("me/data/", views.your_data, name="your-data"),
    path("me/data/prefill-data.json", views.export_json, name="export-json"),
    path("me/data/lab-runs.csv", views.export_runs_csv, name="export-runs-csv"),
    path("me/delete/", views.delete_account, name="delete-account"),
    path(
        "password/",
        auth_views.PasswordChangeView.as_view(
            template_name="accounts/password_change.html",
            success_url=reverse_lazy("accounts:password_change_done"),
        ),
        name="password_change",
    ),
    path(
        "password/done/",
        auth_views.PasswordChangeDoneView.as_view(template_name="accounts/password_change_done.html"),
        name="password_change_done",
    ),
]
