# One image for web and worker: Prefill's Python app, served by gunicorn + whitenoise.
FROM python:3.12-slim-bookworm

ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 PIP_NO_CACHE_DIR=1 \
    DJANGO_SETTINGS_MODULE=config.production PREFILL_VAR_DIR=/app/var

RUN apt-get update && apt-get install -y --no-install-recommends curl \
    && rm -rf /var/lib/apt/lists/* \
    && useradd --create-home --uid 1000 prefill

WORKDIR /app
COPY pyproject.toml README.md ./
COPY config ./config
COPY core ./core
COPY accounts ./accounts
COPY courses ./courses
COPY questions ./questions
COPY labs ./labs
COPY workers ./workers
COPY engines ./engines
COPY scripts ./scripts
COPY templates ./templates
COPY static ./static
COPY manage.py gunicorn.conf.py ./
RUN pip install . && mkdir -p /app/var && chown -R prefill /app/var
# The grader's sentence model, fetched at build time (hash-checked) so the image grades offline.
ENV PREFILL_GRADER_MODEL_DIR=/opt/prefill/grader-model
RUN python -m questions.grading.model_files

USER prefill
# collectstatic needs settings; a build-time key is used only for this step.
RUN SECRET_KEY=build-only-key-build-only-key-build-only-key-0123456789 python manage.py collectstatic --noinput

EXPOSE 8000
CMD ["gunicorn", "config.wsgi", "--bind", "0.0.0.0:8000", "--workers", "3", "--threads", "4", "--access-logfile", "-"]
