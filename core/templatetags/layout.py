"""``{% once %}``: a piece of the layout rendered once per process and reused.

The site's layout links static files (``{% static %}`` looks each name up in the manifest) and
names URLs (``{% url %}`` reverses each pattern): about two thirds of the base template's render,
on every page, for output that only a deploy can change. What is inside ``{% once %}`` must depend
on nothing but the code and the values named after ``once`` (part of the memo's key, each a
small set: a section name, a yes/no), never on the learner, the request or the content.
"""

from django import template
from django.template.base import FilterExpression, Node, NodeList, Parser, Token
from django.utils.safestring import SafeString

register = template.Library()


class OnceNode(Node):
    def __init__(self, nodelist: NodeList, keys: list[FilterExpression]) -> None:
        self.nodelist = nodelist
        self.keys = keys
        # One per template position in this process (the cached template loader keeps the node).
        self.rendered: dict[tuple, SafeString] = {}

    def render(self, context: template.Context) -> SafeString:
        key = tuple(expression.resolve(context) for expression in self.keys)
        html = self.rendered.get(key)
        if html is None:
            # Two threads rendering it at once store the same string: no lock needed.
            html = self.rendered[key] = SafeString(self.nodelist.render(context))
        return html


@register.tag
def once(parser: Parser, token: Token) -> OnceNode:
    """``{% once [value ...] %}...{% endonce %}``: see the module."""
    keys = [parser.compile_filter(bit) for bit in token.split_contents()[1:]]
    nodelist = parser.parse(("endonce",))
    parser.delete_first_token()
    return OnceNode(nodelist, keys)
