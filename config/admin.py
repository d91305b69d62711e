"""The project's admin site: Django's, with two guards on every registered model admin.

Django's admin assumes input fits the database: a many-to-many choice such as a user's groups
with an id past 64 bits reaches the database in an `__in` query, a date-hierarchy year past a C
int raises OverflowError where the changelist only catches ValueError, and a list filter or
search term with a NUL character is an error on PostgreSQL. All are server errors for a
mistyped or hostile URL. The site wraps each admin class at registration, so
the admins of Django, django-axes and our apps all get the guards, including ones added later.
"""

from django import forms
from django.contrib import admin
from django.contrib.admin.apps import AdminConfig
from django.contrib.admin.options import IncorrectLookupParameters
from django.core.exceptions import ValidationError
from django.db import models

# The widest integer primary key any supported database stores (BigAutoField).
MAX_DB_INT = 2**63 - 1


class BoundedModelMultipleChoiceField(forms.ModelMultipleChoiceField):
    """Refuses integer ids the database cannot hold with the field's own "not a valid value"
    message, before they reach an `__in` query."""

    def _check_values(self, value):
        key = self.to_field_name or "pk"
        field = self.queryset.model._meta.pk if key == "pk" else self.queryset.model._meta.get_field(key)
        if isinstance(field, models.IntegerField | models.AutoField):
            for pk in value:
                text = str(pk).strip()
                if text.lstrip("-").isascii() and text.lstrip("-").isdigit() and abs(int(text)) > MAX_DB_INT:
                    raise ValidationError(
                        self.error_messages["invalid_pk_value"], code="invalid_pk_value", params={"pk": pk}
                    )
        return super()._check_values(value)


class GuardedAdminMixin:
    def formfield_for_manytomany(self, db_field, request, **kwargs):
        kwargs.setdefault("form_class", BoundedModelMultipleChoiceField)
        return super().formfield_for_manytomany(db_field, request, **kwargs)

    def get_changelist_instance(self, request):
        # PostgreSQL refuses NUL in any text it compares, so a filter or search term holding one
        # is a database error, not an empty result: refuse it like any other bad lookup.
        if any("\x00" in key or "\x00" in value for key, values in request.GET.lists() for value in values):
            raise IncorrectLookupParameters("a lookup holds a NUL character")
        try:
            return super().get_changelist_instance(request)
        except OverflowError as error:
            # The changelist view turns this into its "?e=1" redirect, as for any bad lookup.
            raise IncorrectLookupParameters(error) from error


class PrefillAdminSite(admin.AdminSite):
    def register(self, model_or_iterable, admin_class=None, **options):
        admin_class = admin_class or admin.ModelAdmin
        if not issubclass(admin_class, GuardedAdminMixin):
            admin_class = type(
                admin_class.__name__, (GuardedAdminMixin, admin_class), {"__module__": admin_class.__module__}
            )
        return super().register(model_or_iterable, admin_class, **options)


class PrefillAdminConfig(AdminConfig):
    default_site = "config.admin.PrefillAdminSite"
