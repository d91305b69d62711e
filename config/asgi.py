import os

from django.core.asgi import get_asgi_application

from config.env import load_settings_or_stop

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

load_settings_or_stop()

application = get_asgi_application()
