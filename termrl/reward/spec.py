"""Reward specs: a weighted sum of named components, loaded from TOML.

A spec file::

    version = 1
    name = "coderl"
    description = "One line on what it rewards."

    [components.outcome]      # the component's name; components keep the file's order
    type = "outcome"          # a type of termrl.reward.components.TYPES
    weight = 1.0              # a number or a schedule table (termrl.reward.schedules)
    mode = "graded"           # every other key is a parameter of the type

``load_spec(name_or_path)`` loads a preset by name or a ``.toml`` file by path
and validates it: any problem raises ``SpecError`` naming the file, the dotted
field and the fix. ``spec.score(evidence, findings, progress, length, group)``
returns a ``Reward`` that reports EVERY component as a ``ComponentScore`` (weight, value,
contribution; stored as ``{"weight", "value", "contribution"}``):

- no evidence, or ``evidence.verified`` False (the harness failed, not the
  agent): ``total`` None and every value and contribution None. Never 0.
- otherwise ``contribution = weight(progress) * value`` and ``total`` is the sum
  of the contributions. A value of None (a length term without ``length``, a
  quality term without a quality stage) contributes nothing (contribution None).
  A ``hack`` component in zero mode is applied last: see ``termrl.reward.hack``.
- ``Reward.steps``: per-step process rewards, weighted and summed over the
  process components (``termrl.reward.process``); [] without any.

Presets (``termrl/reward/presets/<name>.toml``); each also has a ``hack``
component in zero mode with ``floor = -1`` (a high-severity finding caps the
reward at what a compile error earns, never more than doing nothing):

- ``sparse``: ``outcome`` binary, weight 1. 1 for a pass, 0 for any failure: a
  wrong edge case, a crash and a compile error all tie at 0 -- no signal about
  how close a failure was, which is what "sparse" means.
- ``partial``: ``sparse`` plus 0.5 x ``test_pass_ratio``: a pass earns 1.5, a failure
  half the share of hidden tests it passed (the quickstart's reward).
- ``coderl``: ``outcome`` graded with CodeRL's values (Le et al. 2022): pass +1,
  wrong answer -0.3, runtime error / timeout / memory -0.6, compile error -1.
- ``rltf``: ``coderl`` plus RLTF's partial credit (Liu et al. 2023): a wrong
  answer earns ``-0.3 + 1.3 * test_pass_ratio``.
- ``staged``: a curriculum over training progress p. ``compile_success`` weighs
  0.5 at p=0 fading linearly to 0.05 at p=1 (first learn to produce code that
  builds); ``test_pass_ratio`` rises from 0.2 at p=0 to 1.0 at p=0.5 and stays
  there (then make it right); ``outcome`` (graded) weighs 1.0 throughout;
  ``complexity_penalty`` (0.2) enters at p=0.6 and ``lint_penalty`` (0.2) at
  p=0.7, weight 0 before (finally make it clean, once it works).
"""

from __future__ import annotations

import difflib
import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from termrl.protocols import ComponentScore, Evidence, Finding, Reward
from termrl.reward import hack
from termrl.reward.components import TYPES
from termrl.reward.context import Context
from termrl.reward.errors import FieldError, SpecError
from termrl.reward.params import check_params
from termrl.reward.schedules import Schedule, parse_weight
from termrl.verify import taxonomy

SPEC_VERSION = 1
PRESETS_DIR = Path(__file__).with_name("presets")
TOP_KEYS = ("version", "name", "description", "components")


@dataclass(frozen=True)
class Component:
    """One named term of a spec."""

    name: str
    """The key of its ``[components.<name>]`` table; names the term in ``Reward.components``."""
    type: str
    """A key of ``termrl.reward.components.TYPES``."""
    weight: Schedule
    """Training progress in [0, 1] -> weight."""
    params: Mapping[str, Any]
    """Every parameter of the type, defaults filled in."""


@dataclass(frozen=True)
class RewardSpec:
    """A weighted sum of named reward components."""

    name: str
    """The spec's name (a preset's name, or the file's stem)."""
    components: tuple[Component, ...]
    """The terms, in the order of the file."""
    description: str = ""
    """One line on what the spec rewards."""
    path: str | None = None
    """The file it was loaded from."""

    @property
    def component_names(self) -> tuple[str, ...]:
        return tuple(c.name for c in self.components)

    def weights(self, progress: float = 0.0) -> dict[str, float]:
        """Every component's weight at ``progress``."""
        _check_progress(progress)
        return {c.name: c.weight(progress) for c in self.components}

    def bounds(self, progress: float = 1.0) -> tuple[float, float]:
        """The least and the most total reward at ``progress`` (1.0, the end of training, is where
        evaluation scores): each component's contribution at either end of its values
        (``ComponentType.values``), summed, then a zero-mode hack's floor. Both bounds hold; an
        episode reaches one only if every component can be at its end at once. -inf: no least
        (a penalty-mode hack subtracts per finding).

        >>> load_spec("staged").bounds(), load_spec("staged").bounds(0.0), load_spec("partial").bounds()
        ((-1.4, 2.05), (-1.0, 1.7), (-1.0, 1.5))
        """
        _check_progress(progress)
        low = high = 0.0
        floors = []
        for c in self.components:
            weight = c.weight(progress)
            if weight == 0:
                continue
            if hack.is_gate(c.type, c.params):
                floors.append(c.params["floor"])
                continue
            ends = [weight * value for value in TYPES[c.type].values(c.params)]
            low, high = low + min(ends), high + max(ends)
        return round(min([low, *floors]), 9), round(high, 9)

    def scale(self, progress: float = 1.0) -> str:
        """What a total reward is out of, for a line that prints one.

        >>> load_spec("partial").scale()
        'spec partial: -1 .. 1.5'
        """
        low, high = self.bounds(progress)
        return f"spec {self.name}: {low:g} .. {high:g}"

    def score(self, evidence: Evidence | None, findings: Sequence[Finding] = (), progress: float = 0.0,
              length: int | None = None, group: Sequence[tuple[int, bool]] | None = None) -> Reward:
        """The reward of one episode; see the module docstring."""
        ctx = _context(findings, progress, length, group)
        weights = self.weights(progress)
        if evidence is None or not evidence.verified:
            return Reward(None, {n: ComponentScore(w) for n, w in weights.items()})
        _check_evidence(evidence)
        values = {c.name: TYPES[c.type].fn(evidence, c.params, ctx) for c in self.components}
        gates = [c for c in self.components if hack.is_gate(c.type, c.params)]
        contributions: dict[str, float] = {}
        total = 0.0
        for c in self.components:
            if not hack.is_gate(c.type, c.params) and values[c.name] is not None:
                contributions[c.name] = weights[c.name] * values[c.name]
                total += contributions[c.name]
        for c in gates:
            triggered = values[c.name] == 1.0 and weights[c.name] != 0
            contributions[c.name] = hack.gate(total, triggered, c.params["floor"])
            total += contributions[c.name]
        kinds = tuple(f.kind for f in ctx.findings)
        components = {c.name: ComponentScore(weights[c.name], values[c.name], contributions.get(c.name),
                                             kinds if c.type == "hack" else None) for c in self.components}
        return Reward(total, components, self._steps(evidence, weights))

    def _steps(self, evidence: Evidence, weights: dict[str, float]) -> list[float]:
        terms = [(weights[c.name], TYPES[c.type].steps(evidence)) for c in self.components if TYPES[c.type].steps]
        terms = [(w, rewards) for w, rewards in terms if rewards is not None]
        if not terms:
            return []
        return [sum(w * rewards[t] for w, rewards in terms) for t in range(len(terms[0][1]))]


def as_spec(spec: RewardSpec | str | Path) -> RewardSpec:
    """``spec`` itself, or the preset or file it names (``load_spec``): what an entry point that
    takes either (``RolloutConfig``, ``TerminalEnv``, the trainers' reward functions) resolves
    once, so that everything beneath it takes a ``RewardSpec``.

    >>> as_spec("sparse") == as_spec(load_spec("sparse"))
    True
    """
    return load_spec(spec) if isinstance(spec, (str, Path)) else spec


def preset_names() -> list[str]:
    return sorted(p.stem for p in PRESETS_DIR.glob("*.toml"))


def load_spec(preset_name_or_path: str | Path) -> RewardSpec:
    """A preset by name (``"staged"``) or a spec file by path (``"my_reward.toml"``)."""
    path = Path(preset_name_or_path)
    is_path = isinstance(preset_name_or_path, Path) or path.suffix == ".toml" or len(path.parts) > 1
    if not is_path:
        path = PRESETS_DIR / f"{preset_name_or_path}.toml"
        if not path.is_file():
            raise SpecError(preset_name_or_path, None, f"no preset named {str(preset_name_or_path)!r}; presets "
                            f"are: {', '.join(preset_names())}; or give the path of a .toml file")
    if not path.is_file():
        raise SpecError(path, None, "no such file; give the path of a reward spec .toml file or a preset name")
    try:
        data = tomllib.loads(path.read_text())
    except tomllib.TOMLDecodeError as e:
        raise SpecError(path, None, f"not valid TOML: {e}") from e
    except UnicodeDecodeError:
        raise SpecError(path, None, "not UTF-8 text: save the spec as UTF-8") from None
    return spec_from_dict(data, path)


def spec_from_dict(data: Mapping[str, Any], file: Path | str = "<dict>") -> RewardSpec:
    """A spec from its parsed TOML; ``file`` only names it in errors."""
    for key in data:
        if key not in TOP_KEYS:
            raise SpecError(file, key, f"unknown key; a spec has {', '.join(TOP_KEYS)} "
                            "(component parameters go in their [components.<name>] table)")
    if data.get("version", SPEC_VERSION) != SPEC_VERSION:
        raise SpecError(file, "version", f"unsupported version {data['version']!r}; write version = {SPEC_VERSION}")
    for key in ("name", "description"):
        if not isinstance(data.get(key, ""), str):
            raise SpecError(file, key, f"must be a string, got {data[key]!r}")
    tables = data.get("components")
    if not isinstance(tables, dict) or not tables:
        raise SpecError(file, "components", "missing: add at least one [components.<name>] table with "
                        "type and weight")
    components = tuple(_component(file, name, table) for name, table in tables.items())
    return RewardSpec(data.get("name") or Path(str(file)).stem, components, data.get("description", ""),
                      str(file))


def _component(file: Path | str, name: str, table: Any) -> Component:
    field = f"components.{name}"
    if not isinstance(table, dict):
        raise SpecError(file, field, "must be a table with type, weight and the type's parameters")
    ctype = table.get("type")
    if not isinstance(ctype, str) or ctype not in TYPES:
        close = difflib.get_close_matches(str(ctype), TYPES, n=1)
        hint = f"did you mean {close[0]!r}? " if close else ""
        problem = "missing" if ctype is None else f"unknown component type {ctype!r}"
        raise SpecError(file, f"{field}.type", f"{problem}; {hint}use one of: {', '.join(TYPES)}")
    if "weight" not in table:
        raise SpecError(file, f"{field}.weight", "missing: give a number or a schedule table such as "
                        "{kind = \"linear\", start = 1.0, end = 0.1}")
    try:
        weight = parse_weight(table["weight"])
    except FieldError as e:
        raise SpecError(file, _join(f"{field}.weight", e.key), e.problem) from e
    try:
        params = check_params(TYPES[ctype], {k: v for k, v in table.items() if k not in ("type", "weight")})
    except FieldError as e:
        raise SpecError(file, _join(field, e.key), e.problem) from e
    return Component(name, ctype, weight, params)


def _join(field: str, key: str | None) -> str:
    return f"{field}.{key}" if key else field


def _check_progress(progress: float) -> None:
    if isinstance(progress, bool) or not isinstance(progress, (int, float)) or not 0.0 <= progress <= 1.0:
        raise ValueError(f"progress must be a number in [0, 1] (the fraction of training done), got {progress!r}")


def _context(findings: Sequence[Finding], progress: float, length: int | None,
             group: Sequence[tuple[int, bool]] | None) -> Context:
    _check_progress(progress)
    for f in findings:
        if f.severity not in hack.SEVERITIES:
            raise ValueError(f"finding {f.kind!r} has severity {f.severity!r}; use low, medium or high")
    if length is not None and (isinstance(length, bool) or not isinstance(length, int) or length < 0):
        raise ValueError(f"length must be a token count (an int >= 0) or None, got {length!r}")
    if group is not None:
        group = tuple((int(n), bool(ok)) for n, ok in group)
        if any(n < 0 for n, _ in group):
            raise ValueError("group lengths must be token counts >= 0")
    return Context(tuple(findings), float(progress), length, group)


def _check_evidence(evidence: Evidence) -> None:
    unknown = [c for c in evidence.error_classes if c not in taxonomy.CLASSES]
    if unknown:
        raise ValueError(f"evidence {evidence.task_id!r} has unknown error classes {unknown}; "
                         "classes are listed in termrl.verify.taxonomy.CLASSES")
