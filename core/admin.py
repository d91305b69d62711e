from django.contrib import admin


class FileSourcedAdmin(admin.ModelAdmin):
    """Content rows come from files in the repository: staff read them here, change them in git."""

    def has_add_permission(self, request, obj=None) -> bool:
        return False

    def has_delete_permission(self, request, obj=None) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False
