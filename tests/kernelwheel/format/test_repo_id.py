"""kernelwheel.format.repo_id: kernel repository ids, decided as huggingface_hub decides them (plus kernels' owner)."""

from __future__ import annotations

import random

import pytest
from huggingface_hub.errors import HFValidationError
from huggingface_hub.utils import validate_repo_id  # type: ignore[attr-defined]

from kernelwheel.format.repo_id import repo_id_problem


def _huggingface_hub_accepts(repo_id: str) -> bool:
    try:
        validate_repo_id(repo_id)
    except HFValidationError:
        return False
    return True


def _random_part(rng: random.Random) -> str:
    """Mostly name-like pieces, with the separators, runs, suffixes and lengths the rules are about."""
    tokens = ["a", "Z0", "9", "x" * rng.randint(80, 100), ".", "_", "-", "--", "..", " ", "é", ".git", "/"]
    weights = [8, 8, 8, 1, 3, 3, 3, 1, 1, 1, 1, 1, 1]
    return "".join(rng.choices(tokens, weights, k=rng.randint(1, 5)))


def test_agrees_with_huggingface_hub_on_random_ids() -> None:
    """The fast path must never accept what huggingface_hub refuses, and must refuse nothing it accepts under an
    owner: 20 000 random ids, lengths around its 96-character limit included."""
    rng = random.Random(2026)
    accepted = 0
    for _ in range(20_000):
        repo_id = f"{_random_part(rng)}/{_random_part(rng)}" if rng.random() < 0.9 else _random_part(rng)
        expected = repo_id.count("/") == 1 and _huggingface_hub_accepts(repo_id)
        assert (repo_id_problem(repo_id) is None) == expected, repo_id
        accepted += expected
    assert 2000 < accepted < 18_000, accepted  # both answers were exercised


@pytest.mark.parametrize("repo_id", ["org/img2gray", "kernels-community/activation", "a/b", "Org_1/x.y-z",
                                     "_org/name", "o/" + "n" * 96])
def test_kernel_repository_ids_pass(repo_id: str) -> None:
    assert repo_id_problem(repo_id) is None


@pytest.mark.parametrize(
    ("repo_id", "problem"),
    [
        ("img2gray", "expected a Hub repository id of the form org/name, got 'img2gray'"),
        ("org/", "expected a Hub repository id of the form org/name, got 'org/': Repo id must use alphanumeric "
                 "chars, '-', '_' or '.'."),
        ("a/b/c", "expected a Hub repository id of the form org/name, got 'a/b/c'"),
        ("org/a--b", "got 'org/a--b': Cannot have -- or .. in repo_id"),
        ("org/x.git", "got 'org/x.git': Repo_id cannot end by '.git'"),
        ("o/" + "n" * 97, "Repo id must use alphanumeric chars"),
        ("org/na\nme", "got 'org/na\\nme': Repo id must use alphanumeric chars"),  # one line, however hostile
    ],
)
def test_other_ids_are_refused_in_one_line(repo_id: str, problem: str) -> None:
    message = repo_id_problem(repo_id)
    assert message is not None and problem in message and "\n" not in message
