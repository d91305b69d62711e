import pytest

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_sign_up_log_out_log_in_and_see_me(live_server, page):
    page.goto(f"{live_server.url}/")
    page.get_by_role("link", name="Sign up").first.click()
    page.get_by_label("Username").fill("newcomer")
    page.get_by_label("Password:", exact=True).fill("prefill-decode-bandwidth-9")
    page.get_by_label("Password confirmation").fill("prefill-decode-bandwidth-9")
    page.get_by_role("button", name="Sign up").click()
    page.wait_for_url(f"{live_server.url}/accounts/me/")
    assert page.get_by_role("heading", name="newcomer").is_visible()
    assert page.get_by_text("No lessons marked done yet").is_visible()

    page.get_by_role("button", name="Log out newcomer").click()
    page.get_by_role("link", name="Log in").first.click()
    page.get_by_label("Username").fill("newcomer")
    page.get_by_label("Password").fill("prefill-decode-bandwidth-9")
    page.get_by_role("button", name="Log in").click()
    page.wait_for_url(f"{live_server.url}/accounts/me/")
    page.get_by_role("link", name="Me", exact=True).click()
    assert page.get_by_role("heading", name="Lessons done").is_visible()
