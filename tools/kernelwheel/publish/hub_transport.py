"""``HubTransport``: a Hub repository through ``huggingface_hub.HfApi`` (``upload_folder`` with
``allow_patterns``/``delete_patterns`` on the version branch, then ``create_tag``)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from huggingface_hub.errors import RepositoryNotFoundError
from rich.console import Console

from kernelwheel.io.console import print_step
from kernelwheel.io.errors import PublishFailed
from kernelwheel.publish.plan import BASE_BRANCH, Plan, RemoteRefs, count

if TYPE_CHECKING:
    from huggingface_hub import HfApi  # imported by whoever builds the HfApi (kernelwheel.hub.settings.HubSettings.api)


@dataclass(frozen=True)
class HubTransport:
    """The Hub through ``HfApi``. Not atomic: a failure after the upload leaves the branch moved and no tag; running
    the same command again then uploads nothing new and creates the tag."""

    api: HfApi
    repo_type: str = "model"

    @property
    def label(self) -> str:
        return f"{self.api.endpoint} ({self.repo_type} repo)"

    def refs(self, repo_id: str) -> RemoteRefs:
        try:
            refs = self.api.list_repo_refs(repo_id, repo_type=self.repo_type)
        except RepositoryNotFoundError:
            return RemoteRefs(exists=False)
        except Exception as exc:  # any failure to read the remote
            raise PublishFailed(f"{repo_id}: cannot list refs on {self.label}: {exc}") from exc
        return RemoteRefs(
            True, {b.name: b.target_commit for b in refs.branches}, {t.name: t.target_commit for t in refs.tags}
        )

    def push(self, plan: Plan, staging: Path, remote: RemoteRefs, console: Console) -> str:
        repo_id, kind = plan.repo_id, self.repo_type
        step = "creating the repository"
        try:
            self.api.create_repo(repo_id, repo_type=kind, exist_ok=True)
            step = f"creating branch {plan.branch} from {BASE_BRANCH}"
            self.api.create_branch(repo_id, branch=plan.branch, revision=BASE_BRANCH, repo_type=kind, exist_ok=True)
            step = f"uploading to branch {plan.branch}"
            print_step(console, (f"* Uploading {count(plan.variants, 'variant')} to {repo_id}@{plan.branch}"))
            patterns = [f"{name}/**" for name in plan.names]
            info = self.api.upload_folder(
                repo_id=repo_id, repo_type=kind, folder_path=staging, path_in_repo="build", revision=plan.branch,
                allow_patterns=patterns, delete_patterns=patterns, commit_message=plan.commit_message.split("\n")[0],
                commit_description=plan.commit_message, parent_commit=remote.branches.get(plan.branch),
            )
            commit = str(info.oid)
            step = (f"creating tag {plan.tag} on {commit[:12]} (branch {plan.branch} already holds the upload: run "
                    "the same command again to create the tag)")
            print_step(console, (f"* Tagging {commit[:12]} as {plan.tag}"))
            self.api.create_tag(repo_id, tag=plan.tag, revision=commit, repo_type=kind)
        except Exception as exc:  # any failure of a remote write; the cause stays chained
            raise PublishFailed(f"{repo_id} on {self.label}: {step}: {exc}") from exc
        return commit
