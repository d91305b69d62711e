from django import forms
from django.contrib import admin, messages

from core.admin import FileSourcedAdmin
from labs.models import InferenceTarget, Lab, LabRun
from labs.services import cancel_run
from labs.targets import probe_and_record


@admin.register(Lab)
class LabAdmin(FileSourcedAdmin):
    list_display = ("title", "slug", "order", "retired")


class TargetForm(forms.ModelForm):
    # The key is write-only: the form never sends it back to the browser.
    api_key = forms.CharField(
        required=False, widget=forms.PasswordInput(render_value=False), help_text="Leave empty to keep the stored key."
    )

    class Meta:
        model = InferenceTarget
        exclude: tuple[str, ...] = ()

    def clean_api_key(self):
        key = self.cleaned_data.get("api_key")
        return key if key else (self.instance.api_key if self.instance.pk else "")


@admin.register(InferenceTarget)
class InferenceTargetAdmin(admin.ModelAdmin):
    form = TargetForm
    list_display = ("name", "kind", "hardware_name", "enabled", "engine_version", "probed_at")
    list_filter = ("kind", "enabled")
    readonly_fields = ("capabilities", "engine_version", "probed_at", "probe_error")
    actions = ["probe_targets"]

    @admin.action(description="Probe the selected targets")
    def probe_targets(self, request, queryset):
        for target in queryset:
            target = probe_and_record(target_id=target.pk)
            level = messages.ERROR if target.probe_error else messages.SUCCESS
            self.message_user(
                request, f"{target.name}: {target.probe_error or target.engine_version or 'reachable'}", level
            )


@admin.register(LabRun)
class LabRunAdmin(admin.ModelAdmin):
    list_display = ("pk", "user", "lab", "target", "status", "created_at", "finished_at")
    list_filter = ("status", "target", "lab")
    list_select_related = ("user", "lab", "target")
    readonly_fields = [f.name for f in LabRun._meta.fields]
    actions = ["cancel_runs"]

    def has_add_permission(self, request, obj=None) -> bool:
        return False

    @admin.action(description="Cancel the selected runs (measured requests are kept)")
    def cancel_runs(self, request, queryset):
        for run in queryset:
            cancel_run(run=run)
        self.message_user(request, f"Cancelling {queryset.count()} runs.")
