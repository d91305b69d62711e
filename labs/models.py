from django.db import models
from django.urls import reverse

from core.models import ContentQuerySet


class Lab(models.Model):
    """A lab guide loaded from labs/content/<slug>.toml; `spec` holds params, plan and checks."""

    slug = models.SlugField(unique=True)
    title = models.CharField(max_length=200)
    objective = models.TextField()
    lesson_ref = models.CharField(max_length=200, blank=True)
    spec = models.JSONField()
    source_path = models.CharField(max_length=300)
    content_hash = models.CharField(max_length=64)
    order = models.PositiveIntegerField(default=0)
    retired = models.BooleanField(default=False)

    objects = ContentQuerySet.as_manager()

    class Meta:
        ordering = ["order", "title"]

    def __str__(self) -> str:
        return self.title

    def get_absolute_url(self) -> str:
        return reverse("labs:lab", kwargs={"lab_slug": self.slug})


class InferenceTarget(models.Model):
    """An engine learners can measure, configured by staff only. Learners see the name, never the URL."""

    class Kind(models.TextChoices):
        VLLM = "vllm", "vLLM"
        OLLAMA = "ollama", "Ollama"
        LLAMACPP = "llamacpp", "llama.cpp server"
        OPENAI_COMPATIBLE = "openai-compatible", "OpenAI-compatible"

    class Api(models.TextChoices):
        OPENAI_COMPLETIONS = "openai-completions", "OpenAI /v1/completions"
        OPENAI_CHAT = "openai-chat", "OpenAI /v1/chat/completions"
        OLLAMA_GENERATE = "ollama-generate", "Ollama /api/generate"
        OLLAMA_CHAT = "ollama-chat", "Ollama /api/chat"

    name = models.CharField(max_length=100, unique=True)
    slug = models.SlugField(max_length=60, unique=True, help_text="Also names the Celery queue: target-<slug>")
    kind = models.CharField(max_length=20, choices=Kind.choices)
    api = models.CharField(max_length=24, choices=Api.choices, default=Api.OPENAI_COMPLETIONS)
    base_url = models.URLField(help_text="Seen by staff only")
    model_names = models.JSONField(default=list, help_text="Model names served; the first is the default")
    api_key = models.CharField(max_length=300, blank=True, help_text="Stored, never rendered")
    description = models.TextField(blank=True)
    synthetic_text = models.BooleanField(default=False, help_text="Generated model: real timings, meaningless words")
    real_model_names = models.JSONField(
        default=list,
        blank=True,
        help_text="Models with real weights (real words, real stopping) on a target whose other models are generated",
    )

    hardware_name = models.CharField(max_length=100, blank=True)
    hardware_slug = models.SlugField(blank=True, help_text="Row of the hardware catalogue, if any")
    memory_bandwidth_bytes_s = models.FloatField(null=True, blank=True)
    peak_flops = models.FloatField(null=True, blank=True, help_text="Dense FLOP/s at the serving precision")
    memory_bytes = models.FloatField(null=True, blank=True)
    model_bytes = models.JSONField(
        default=dict, blank=True, help_text="Weight bytes per model name, for speed-of-light bounds"
    )

    max_concurrency = models.PositiveIntegerField(default=64)
    max_prompt_tokens = models.PositiveIntegerField(default=4096)
    max_output_tokens = models.PositiveIntegerField(default=2048)
    max_requests_per_run = models.PositiveIntegerField(default=500)
    max_run_seconds = models.PositiveIntegerField(default=600)
    runs_per_learner_per_day = models.PositiveIntegerField(default=30)
    price_per_gpu_hour = models.DecimalField(max_digits=8, decimal_places=3, null=True, blank=True)

    capabilities = models.JSONField(default=dict, blank=True)
    engine_version = models.CharField(max_length=100, blank=True)
    probed_at = models.DateTimeField(null=True, blank=True)
    probe_error = models.TextField(blank=True)
    enabled = models.BooleanField(default=True)
    hardware_group = models.SlugField(
        max_length=60,
        blank=True,
        help_text="Targets on the same hardware (two servers on one CPU or GPU) share this name, so runs never overlap",
    )

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name

    @property
    def queue_name(self) -> str:
        return f"target-{self.slug}"

    @property
    def server_slots(self) -> int | None:
        """How many requests the engine serves at once (llama.cpp --parallel, reported by its
        /props as total_slots; staff may set it for Ollama's OLLAMA_NUM_PARALLEL), or None."""
        slots = (self.capabilities or {}).get("server_slots")
        return int(slots) if isinstance(slots, int) and slots > 0 else None

    @property
    def can_force_output_length(self) -> bool:
        """Whether a request can make the engine decode exactly max_tokens. Ollama's API has no
        ignore_eos or min_tokens; elsewhere the probe's answer counts, and an unprobed target is
        given the benefit of the doubt (the run's findings still flag short outputs)."""
        if self.kind == self.Kind.OLLAMA:
            return False
        return (self.capabilities or {}).get("ignore_eos") is not False

    @property
    def default_model(self) -> str:
        return self.model_names[0] if self.model_names else ""

    def serves_synthetic_text(self, model_name: str) -> bool:
        """Whether this model's words are noise (a generated model) rather than a real model's."""
        return self.synthetic_text and model_name not in (self.real_model_names or [])


class LabRun(models.Model):
    """One learner's measured run. The database, not the broker, is the source of truth."""

    class Status(models.TextChoices):
        QUEUED = "queued", "Queued"
        RUNNING = "running", "Running"
        SUCCEEDED = "succeeded", "Succeeded"
        FAILED = "failed", "Failed"
        CANCELLED = "cancelled", "Cancelled"

    ACTIVE = (Status.QUEUED, Status.RUNNING)

    user = models.ForeignKey("auth.User", on_delete=models.CASCADE, related_name="lab_runs")
    lab = models.ForeignKey(Lab, on_delete=models.PROTECT, related_name="runs")
    target = models.ForeignKey(InferenceTarget, on_delete=models.PROTECT, related_name="runs")
    model_name = models.CharField(max_length=200)
    params = models.JSONField()
    prediction = models.TextField(blank=True)
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.QUEUED, db_index=True)
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    heartbeat_at = models.DateTimeField(null=True, blank=True)
    dispatched_at = models.DateTimeField(null=True, blank=True)
    dispatch_count = models.PositiveSmallIntegerField(default=0)
    requeue_count = models.PositiveSmallIntegerField(default=0)
    cancel_requested = models.BooleanField(default=False)
    progress = models.JSONField(default=dict, blank=True)
    error = models.TextField(blank=True)
    summary = models.JSONField(null=True, blank=True)
    workload_seed = models.PositiveBigIntegerField(
        null=True,
        blank=True,
        help_text="Drawn fresh each time the run is measured: its prompts open with a nonce from it, so no "
        "engine cache carries another run's prefill into this one",
    )
    result_meta = models.JSONField(
        default=dict, blank=True, help_text="Schema version, spec, target (public), server metrics"
    )

    class Meta:
        ordering = ["-created_at"]
        indexes = [
            models.Index(fields=["target", "status", "created_at"]),
            models.Index(fields=["user", "-created_at"]),
        ]

    def __str__(self) -> str:
        return f"run {self.pk} · {self.lab.slug} on {self.target.name} · {self.status}"

    def get_absolute_url(self) -> str:
        return reverse("labs:run", kwargs={"run_id": self.pk})

    @property
    def synthetic_text(self) -> bool:
        return self.target.serves_synthetic_text(self.model_name)

    @property
    def model_kind(self) -> str:
        """What the result measured, in the words the pages use: "synthetic text" or "real model"."""
        if self.synthetic_text:
            return "synthetic text"
        return "real model" if self.model_name in (self.target.real_model_names or []) else ""

    @property
    def is_active(self) -> bool:
        return self.status in self.ACTIVE


class RunRequest(models.Model):
    """One measured request of a run, written as it lands so a crash keeps what was measured."""

    run = models.ForeignKey(LabRun, on_delete=models.CASCADE, related_name="requests")
    index = models.PositiveIntegerField()
    warmup = models.BooleanField(default=False)
    step = models.JSONField(default=dict, help_text="The swept parameter values of this request")
    ttft_s = models.FloatField(null=True)
    tpot_s = models.FloatField(null=True)
    e2e_s = models.FloatField(null=True)
    output_tokens = models.PositiveIntegerField(null=True)
    prompt_tokens = models.PositiveIntegerField(null=True)
    error_kind = models.CharField(max_length=40, blank=True)
    record = models.JSONField(help_text="The measurement library's full record")

    class Meta:
        ordering = ["index"]
        constraints = [models.UniqueConstraint(fields=["run", "index"], name="runrequest_unique_index")]

    def __str__(self) -> str:
        return f"run {self.run_id} request {self.index}"


class CohortResult(models.Model):
    """A succeeded run's aggregate, kept for the cohort view after its learner deleted their account.

    Anonymised by what it leaves out: no user, no run id, no prediction, no per-request rows or
    timestamps, no error text, and the day it finished rather than the minute (a minute could be
    matched against someone's login times). What stays is what the cohort chart plots: the lab,
    the target and model, the swept parameters and the run's summary statistics.
    """

    lab = models.ForeignKey(Lab, on_delete=models.PROTECT, related_name="cohort_results")
    target = models.ForeignKey(InferenceTarget, on_delete=models.PROTECT, related_name="cohort_results")
    model_name = models.CharField(max_length=200)
    params = models.JSONField(default=dict)
    summary = models.JSONField()
    finished_on = models.DateField()

    class Meta:
        ordering = ["-finished_on", "-pk"]

    def __str__(self) -> str:
        return f"{self.lab.slug} on {self.target.name} ({self.finished_on:%Y-%m-%d}, former learner)"
