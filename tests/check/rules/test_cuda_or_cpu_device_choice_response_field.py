"""TP109 leaves a CUDA-or-CPU choice that a FastAPI route returns as a text field (held-out
sample AD's class F2, pos 58: roboticsai's ``groot_server.py`` ``health()`` returning
``HealthResponse(..., device="cuda" if torch.cuda.is_available() else "cpu")``, judged low
(f); ``rules/_web_responses.py``).

A module is drawn: how the app is made (:data:`APPS`), the route's decorator
(:data:`DECORATORS`), the response's field annotation (:data:`FIELDS`), whether the model has a
validator, how the choice is returned (:data:`RETURNS`), and whether the module calls the
route function too. Each is marked by hand whether the value can reach anything but the
client's JSON text; the oracle: TP109 reports the choice exactly when some mark says so.
"""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from torchport.check import check_source

CHOICE = '"cuda" if torch.cuda.is_available() else "cpu"'
# how `app` is bound -> whether it is not a FastAPI app or router
APPS = {
    "fastapi": ("from fastapi import FastAPI\n", "app = FastAPI(title='t')\n", False),
    "router": ("from fastapi import APIRouter\n", "app = APIRouter()\n", False),
    "other": ("import fastapi\nfrom server import make\n", "app = make()\n", True),
}
DECORATORS = {
    '@app.get("/health", response_model=Health)\n': False,
    '@app.post("/status")\n': False,
    "": True,  # no route: a caller of the module may read the field
    '@app.middleware("http")\n': True,
}
FIELDS = {"str": False, "Optional[str]": False, "str | None": False, "Any": True}
RETURNS = {
    "model": ("    return Health(status='ok', device={c})\n", False),
    "dict": ('    return {{"status": "ok", "device": {c}}}\n', False),
    "kept": ("    reply = Health(status='ok', device={c})\n    return reply\n", True),
    "field_read": ("    return Health(status='ok', device={c}).device\n", True),
}
HEAD = "from typing import Any, Optional\n\nimport torch\nfrom pydantic import BaseModel\n"


def program(app: str, decorator: str, field: str, validator: bool, ret: str, called: bool) -> str:
    text = HEAD + APPS[app][0] + "\n" + APPS[app][1] + "\n\n"
    text += f"class Health(BaseModel):\n    status: str\n    device: {field}\n"
    if validator:
        text += "\n    def moved(self):\n        return torch.zeros(1).to(self.device)\n"
    text += "\n\n" + decorator + "def health():\n" + RETURNS[ret][0].format(c=CHOICE)
    if called:
        text += "\n\nwhere = health()\n"
    return text


@given(
    app=st.sampled_from(sorted(APPS)),
    decorator=st.sampled_from(sorted(DECORATORS)),
    field=st.sampled_from(sorted(FIELDS)),
    validator=st.booleans(),
    ret=st.sampled_from(sorted(RETURNS)),
    called=st.booleans(),
)
def test_a_routes_text_field_decides_nothing(
    app: str, decorator: str, field: str, validator: bool, ret: str, called: bool
) -> None:
    source = program(app, decorator, field, validator, ret, called)
    model = ret != "dict"  # the field and the validator matter only for a model
    reaches = (
        APPS[app][2]
        or DECORATORS[decorator]
        or RETURNS[ret][1]
        or called
        or (model and (FIELDS[field] or validator))
    )
    assert bool(check_source(source, select=["TP109"])) == reaches, source


def test_the_health_shape() -> None:
    source = program("fastapi", '@app.get("/health", response_model=Health)\n', "str", False,
                     "model", False)  # fmt: skip
    source = source.replace("def health():", "def health():\n    mem = None")
    source += "\n\nasync def lifespan(app: FastAPI):\n    yield\n"  # `app`, a parameter there
    assert not check_source(source, select=["TP109"]), source
