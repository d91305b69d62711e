"""The layout's fixed parts (static links, the main navigation, the footer) are rendered once per
process ({% once %}), and yet every page shows its own section as current and the Me link only
to a learner who is signed in."""

LESSON = "/learn/lessons/first-lesson/"
QUESTION = "/practice/q/sample-question/"


def _current(html: str) -> str:
    nav = html.split('<ul class="nav-links">')[1].split("</ul>")[0]
    return nav.split('aria-current="page">')[1].split("<")[0] if 'aria-current="page"' in nav else ""


def test_each_page_marks_its_own_section_and_the_me_link_follows_the_sign_in(client, synced, user):
    anonymous = client.get(LESSON).content.decode()
    assert _current(anonymous) == "Learn" and ">Me</a>" not in anonymous
    assert _current(client.get(QUESTION).content.decode()) == "Practice"
    client.force_login(user)
    signed_in = client.get(LESSON).content.decode()
    assert _current(signed_in) == "Learn" and ">Me</a>" in signed_in and f"Log out {user.username}" in signed_in
    assert _current(client.get("/accounts/me/").content.decode()) == "Me"
    client.logout()
    assert ">Me</a>" not in client.get(QUESTION).content.decode()
    assert 'href="/static/css/prefill.css"' in client.get(QUESTION).content.decode()
