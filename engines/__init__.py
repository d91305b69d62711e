"""Inference engines Prefill runs itself: llama.cpp's llama-server on the CPU, built from source.

Nothing here imports Django, so the engines can be built, started and measured from a plain
Python process (the Makefile, CI, a test) as well as from the web app.
"""
