from django import forms
from django.contrib.auth import authenticate
from django.contrib.auth.forms import UserCreationForm
from django.contrib.auth.models import User
from django.http import HttpRequest


class SignUpForm(UserCreationForm):
    class Meta(UserCreationForm.Meta):
        model = User
        fields = ("username",)


class DeleteAccountForm(forms.Form):
    """Deleting an account asks for the password again, checked through Django's authenticate():
    the login throttle counts a wrong one, so a stolen session cannot guess its way to a deletion."""

    password = forms.CharField(
        label="Your password",
        strip=False,
        widget=forms.PasswordInput(attrs={"autocomplete": "current-password"}),
    )

    def __init__(self, *args, request: HttpRequest, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.request = request

    def clean_password(self) -> str:
        password = self.cleaned_data["password"]
        user = self.request.user
        confirmed = authenticate(self.request, username=user.get_username(), password=password)
        if confirmed is None or confirmed.pk != user.pk:
            raise forms.ValidationError(
                "That is not your password. Nothing was deleted; type the password you log in with."
            )
        return password
