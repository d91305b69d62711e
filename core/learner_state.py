"""One token per learner that changes whenever something of theirs that a page shows changes.

Pages a learner reloads (a lesson, a question, a lab, the review queue, the Me page) are kept
whole per learner (core.page_cache) under this token: every write of the learner's progress,
answers, reveals, review cards, runs or account renews it, so the next request misses and
renders afresh. The token lives in Redis so every process sees a renewal at once; it is a random
string, not a counter, so a Redis restart that loses it can never bring back an old value that a
process still holds a page for.

Saves and deletes through the ORM renew it by signal (``renew_learner_state_on_change`` in the
apps' ready()); queryset ``update()`` and ``bulk_create`` send no signal, so the services that use
them call ``renew_learner_state`` themselves. A renewal happens at the write and again when its
transaction commits: a page rendered in between must not be kept under the current token.
"""

import secrets
from collections.abc import Iterable

from django.core.cache import cache
from django.db import transaction

LEARNER_STATE_KEY = "learner-state:{user_id}"
# A learner's token outlives any page kept under it (core.page_cache keeps pages for minutes).
LEARNER_STATE_TIMEOUT_S = 7 * 24 * 60 * 60


def learner_state_token(*, user_id: int) -> str | None:
    """The learner's current token (one Redis GET), minted on first use; None while Redis is away,
    when nothing may be cached for them."""
    key = LEARNER_STATE_KEY.format(user_id=user_id)
    token = cache.get(key)
    if token is not None:
        return token
    minted = secrets.token_hex(8)
    # add(): two processes minting at once agree on whichever reached Redis first.
    if cache.add(key, minted, timeout=LEARNER_STATE_TIMEOUT_S):
        return minted
    return cache.get(key)


def renew_learner_state(*, user_ids: Iterable[int]) -> None:
    """Something these learners see changed: renew their tokens once the transaction commits."""
    keys = {LEARNER_STATE_KEY.format(user_id=user_id) for user_id in user_ids if user_id is not None}
    if not keys:
        return

    def renew() -> None:
        cache.set_many(dict.fromkeys(keys, secrets.token_hex(8)), timeout=LEARNER_STATE_TIMEOUT_S)

    # Now, so no page from before the write is served again, and once more at the commit, so a
    # page rendered in between (from the rows as they were before the commit) is not either.
    renew()
    transaction.on_commit(renew)


def _row_changed(*, instance: object, user_field: str, **kwargs: object) -> None:
    renew_learner_state(user_ids=[getattr(instance, user_field)])


def renew_learner_state_on_change(model: type, *, user_field: str = "user_id") -> None:
    """Every save or delete of ``model`` renews the token of the learner named by ``user_field``
    (``pk`` for the user model itself); for AppConfig.ready."""
    from django.db.models.signals import post_delete, post_save

    def receiver(sender: type, instance: object, **kwargs: object) -> None:
        _row_changed(instance=instance, user_field=user_field)

    name = f"{model._meta.label}.{user_field}"
    post_save.connect(receiver, sender=model, weak=False, dispatch_uid=f"learner-state-save-{name}")
    post_delete.connect(receiver, sender=model, weak=False, dispatch_uid=f"learner-state-delete-{name}")
