from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import include, path

from core import views as core_views
from courses import views as course_views

urlpatterns = [
    path("", course_views.home, name="home"),
    path("healthz", core_views.healthz, name="healthz"),
    path("favicon.ico", core_views.favicon, name="favicon"),
    path("glossary/", core_views.glossary, name="glossary"),
    path(
        "accounts/login/",
        auth_views.LoginView.as_view(template_name="accounts/login.html", redirect_authenticated_user=True),
        name="login",
    ),
    path("accounts/logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("accounts/", include("accounts.urls")),
    path("learn/", include("courses.urls")),
    path("practice/", include("questions.urls")),
    path("labs/", include("labs.urls")),
    path("admin/", admin.site.urls),
]

handler404 = "core.views.not_found"
handler500 = "core.views.server_error"
