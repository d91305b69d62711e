import os

from django.core.wsgi import get_wsgi_application

from config.env import load_settings_or_stop

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

# 4 is gunicorn's "App failed to load": the master stops instead of respawning a worker that can
# never start (any other status would restart it in a loop).
GUNICORN_APP_LOAD_ERROR = 4
load_settings_or_stop(status=GUNICORN_APP_LOAD_ERROR)

application = get_wsgi_application()
