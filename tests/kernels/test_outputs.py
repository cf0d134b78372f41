"""Cell outputs as the agent reads them: readable text, cuts said, pictures beside."""

from __future__ import annotations

import nbformat

from jupyter_mcp.kernels.outputs import IMAGE_LIMIT, cut, images_of, output_object, readable_text


def test_terminal_escapes_and_redraws_are_resolved() -> None:
    assert readable_text("\x1b[31mred\x1b[0m plain") == "red plain"
    assert readable_text("\x1b]8;;http://x\x1b\\link\x1b]8;;\x1b\\") == "link"
    # A progress bar redrawn with carriage returns shows its last state.
    assert readable_text("10%\r50%\r100%\ndone\r\n") == "100%\ndone\n"
    assert readable_text("a\x00b\x07c\td") == "abc\td"
    # R's help (IRkernel's inspection) underlines and bolds as manual pages do, by overstrike.
    assert readable_text("_\x08M_\x08e_\x08a_\x08n and B\x08Bo\x08ol\x08ld_") == "Mean and Bold_"
    # A lone surrogate (bytes decoded with surrogateescape) can be sent as UTF-8.
    text = readable_text("junk \udcff end")
    assert text == "junk \ufffd end"
    text.encode("utf-8")


def test_long_text_keeps_head_and_tail_and_says_so() -> None:
    text = "".join(f"line {i}\n" for i in range(5000))
    short, truncated = cut(text, 600)
    assert truncated and len(short) < 700
    assert short.startswith("line 0\n") and short.endswith("line 4999\n")
    assert "characters cut" in short
    assert cut("small", 600) == ("small", False)


def test_each_kind_of_output() -> None:
    stream = nbformat.v4.new_output("stream", name="stderr", text=["warn", "ing\n"])
    assert output_object(stream) == {
        "outputType": "stream",
        "name": "stderr",
        "text": "warning\n",
        "mimeTypes": ["text/plain"],
        "truncated": False,
    }
    rich = nbformat.v4.new_output(
        "execute_result",
        data={"text/html": "<b>x</b>", "text/plain": "x"},
        execution_count=3,
    )
    assert output_object(rich)["text"] == "x"
    assert output_object(rich)["mimeTypes"] == ["text/html", "text/plain"]
    picture_only = nbformat.v4.new_output("display_data", data={"image/png": "iVBORw0K"})
    assert output_object(picture_only)["text"] == "[image/png]"
    error = nbformat.v4.new_output(
        "error",
        ename="ZeroDivisionError",
        evalue="division by zero",
        traceback=["\x1b[31mTraceback\x1b[0m", "\x1b[1;31mZeroDivisionError\x1b[0m: division"],
    )
    obj = output_object(error)
    assert obj["ename"] == "ZeroDivisionError" and obj["evalue"] == "division by zero"
    assert obj["text"] == "Traceback\nZeroDivisionError: division"
    assert obj["mimeTypes"] == []


def test_pictures_are_attached_png_first_and_huge_ones_omitted() -> None:
    both = nbformat.v4.new_output(
        "display_data", data={"image/jpeg": "/9j/", "image/png": "iVBO\nRw0K", "text/plain": "F"}
    )
    jpeg = nbformat.v4.new_output("display_data", data={"image/jpeg": "/9j/4AAQ"})
    huge = nbformat.v4.new_output("display_data", data={"image/png": "A" * (IMAGE_LIMIT + 4)})
    images = images_of([both, jpeg, huge, nbformat.v4.new_output("stream", text="x")])
    assert [(i.mime_type, i.data) for i in images] == [
        ("image/png", "iVBORw0K"),
        ("image/jpeg", "/9j/4AAQ"),
    ]
    assert "imageOmitted" in output_object(huge)
    assert "imageOmitted" not in output_object(both)
