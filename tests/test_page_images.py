"""Tests of faircode.report.page_images: the report page's embedded images are carried over from
the page being replaced only where it embeds the image of the same PNG bytes, and a page is
the same bytes with or without a previous one."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from faircode.report import page_images as pages
from faircode.report.page_images import SHA_ATTRIBUTE, inline_png, page_images, previous_images


def _png(path: Path, colour: tuple[int, int, int]) -> Path:
    from PIL import Image

    Image.new("RGB", (40, 30), colour).save(path)
    return path


def _page(images: dict[Path, tuple[str, str]]) -> str:
    """A page embedding ``images`` as write_html does (the attribute before ``src``)."""
    return "".join(f'<img id="figure-{i}" alt="x" {SHA_ATTRIBUTE}="{sha}" '
                   f'src="data:image/png;base64,{image}">'
                   for i, (sha, image) in enumerate(images.values()))


@pytest.fixture
def encoded(monkeypatch: pytest.MonkeyPatch) -> list[Path]:
    """The PNGs encoded from here on (inline_png spied)."""
    seen: list[Path] = []

    def spy(path: Path) -> str:
        seen.append(path)
        return inline_png(path)

    monkeypatch.setattr(pages, "inline_png", spy)
    return seen


def test_an_image_of_the_same_png_bytes_is_carried_over(tmp_path: Path, encoded: list[Path]
                                                        ) -> None:
    """Second page: the unchanged PNG's image comes from the first page, the redrawn one is
    encoded again; both are what encoding gives."""
    red, blue = _png(tmp_path / "red.png", (200, 0, 0)), _png(tmp_path / "blue.png", (0, 0, 200))
    page = tmp_path / "report.html"
    first = page_images([red, blue], previous=page, workers=1)
    assert sorted(encoded) == [blue, red]
    page.write_text(_page(first), encoding="utf-8")
    _png(blue, (0, 200, 0))  # redrawn: other bytes
    encoded.clear()
    second = page_images([red, blue], previous=page, workers=1)
    assert encoded == [blue]
    assert second[red] == first[red]
    assert second[blue] == (hashlib.sha256(blue.read_bytes()).hexdigest(), inline_png(blue))
    assert second[blue] != first[blue]


@pytest.mark.parametrize("page_text", [None, "", "<html>no images</html>", b"\xff\xfe\x00bad"])
def test_a_missing_or_foreign_page_lends_nothing(tmp_path: Path, encoded: list[Path],
                                                page_text: str | bytes | None) -> None:
    red = _png(tmp_path / "red.png", (200, 0, 0))
    page = tmp_path / "report.html"
    if isinstance(page_text, bytes):
        page.write_bytes(page_text)
    elif page_text is not None:
        page.write_text(page_text)
    assert previous_images(page) == {}
    images = page_images([red], previous=page, workers=1)
    assert encoded == [red] and images[red][1] == inline_png(red)


def test_previous_images_reads_every_embedded_image(tmp_path: Path) -> None:
    shas = ["a" * 64, "b" * 64]
    page = tmp_path / "report.html"
    page.write_text(_page({Path("x"): (shas[0], "QUJD"), Path("y"): (shas[1], "REVG+/==")}))
    assert previous_images(page) == {shas[0]: "QUJD", shas[1]: "REVG+/=="}
