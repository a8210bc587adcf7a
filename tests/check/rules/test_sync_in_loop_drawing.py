"""TP202 leaves a host copy that an image drawing or file takes in the same iteration.

``img = imgs[i].cpu().numpy()`` then ``cv2.rectangle(img, ...)`` (YOLOX's assignment
visualiser): OpenCV, PIL and matplotlib draw on host arrays, so the copy is needed now.
Generated loops run a model, read a value (``.cpu()``, ``.numpy()``, ``.tolist()``),
hand it straight to a use or keep it under a name used after (or, as a control, before)
the read. The oracle is a table written apart: the use draws (a drawing library's call,
an image-writing method, a function named for drawing) or it does not (a list, a save
of arrays, a plain function); only a drawing after the read, in the loop, leaves it.
"""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from torchport.check._engine import check_text, ruleset_for

READS = (
    "imgs[i].cpu().numpy()",
    "imgs[i].permute(1, 2, 0).cpu().numpy().copy()",
    "masks[i].detach().cpu().numpy()",
    "boxes[i].tolist()",
)
USES = {  # a call taking the value (`{}`), and whether it draws on the host
    "cv2.rectangle({}, p1, p2, color, 2)": True,
    "cv2.imwrite(name, {})": True,
    "Image.fromarray({}).save(name)": True,
    "plt.imshow({})": True,
    "draw_boxes({}, labels)": True,
    "visualize_assign({}, boxes, name)": True,
    "writer.imsave(name, {})": True,
    "results.append({})": False,
    "np.save(name, {})": False,
    "keep({}, labels)": False,
}
HEAD = "import cv2\nimport numpy as np\nimport torch\nimport matplotlib.pyplot as plt\n"
HEAD += "from PIL import Image\n\n"


@given(
    read=st.sampled_from(READS),
    use=st.sampled_from(sorted(USES)),
    through_name=st.booleans(),
    use_first=st.booleans(),
)
def test_a_copy_drawn_in_the_same_iteration_is_left(
    read: str, use: str, through_name: bool, use_first: bool
) -> None:
    body = ["out = model(x)"]
    if through_name:
        uses = [use.format("img")]
        body += [*uses, f"img = {read}"] if use_first else [f"img = {read}", *uses]
    else:
        body += [use.format(read)]
    source = HEAD + "for i in range(n):\n" + "".join(f"    {line}\n" for line in body)
    drawn = USES[use] and not (through_name and use_first)
    found = check_text(source, "m.py", ruleset_for(["TP202"], None)).findings
    assert bool(found) != drawn, source
