"""llama.cpp's own llama-server: built from the llama-cpp-python sdist, fed generated models."""

# The sdist pins one llama.cpp commit; everything cached (sources, binary) is keyed by this.
LLAMA_CPP_PYTHON_VERSION = "0.3.36"
