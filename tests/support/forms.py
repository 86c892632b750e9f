"""The forms of an HTML page, read as a browser reads them, for tests that speak real HTTP."""

from html.parser import HTMLParser


class Forms(HTMLParser):
    """The forms of a page: action and the inputs' name -> value, by the form's id.

    A form without an id is keyed by its ``data-provider`` (webauth's sign-in
    forms), else by ``None``. :attr:`all` lists every form in page order.
    """

    def __init__(self, text: str) -> None:
        super().__init__()
        self.forms: dict[str | None, dict] = {}
        self.all: list[dict] = []
        self._current: dict | None = None
        self.feed(text)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        attributes = dict(attrs)
        if tag == "form":
            self._current = {
                "action": attributes.get("action"),
                "method": (attributes.get("method") or "get").lower(),
                "fields": {},
            }
            self.forms[attributes.get("id") or attributes.get("data-provider")] = self._current
            self.all.append(self._current)
        elif tag == "input" and self._current is not None and attributes.get("name"):
            self._current["fields"][attributes["name"]] = attributes.get("value") or ""

    def handle_endtag(self, tag: str) -> None:
        if tag == "form":
            self._current = None

    def posting_to(self, suffix: str) -> dict:
        """The one form whose action ends with *suffix* (fails when there is none or several)."""
        found = [f for f in self.all if (f["action"] or "").split("?")[0].endswith(suffix)]
        assert len(found) == 1, f"{len(found)} forms post to *{suffix}: {self.all}"
        return found[0]
