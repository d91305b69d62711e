"""What every content-backed model shares; core defines no tables of its own."""

from django.db import models


class ContentQuerySet(models.QuerySet):
    """Rows loaded from content files: a row whose file is gone is retired, never deleted."""

    def live(self):
        return self.filter(retired=False)
