from django.apps import AppConfig


class AccountsConfig(AppConfig):
    default_auto_field = "django.db.models.BigAutoField"
    name = "accounts"

    def ready(self) -> None:
        from django.contrib.auth import get_user_model

        from core.learner_state import renew_learner_state_on_change

        # The header shows the username and staff links; a password change or deactivation must
        # reach the session check, which a kept page would skip (core.page_cache).
        renew_learner_state_on_change(get_user_model(), user_field="pk")
