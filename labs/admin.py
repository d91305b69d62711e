from django.contrib import admin

from core.admin import FileSourcedAdmin
from labs.models import Lab


@admin.register(Lab)
class LabAdmin(FileSourcedAdmin):
    list_display = ("title", "slug", "order", "retired")
