"""The execute phase's side of the packages under test: the import probe put into the place once per
session, its variables in the command's environment, and after the command the run's own record read
back and settled against the prediction (place/packages.py's rule)."""

from __future__ import annotations

import threading
from dataclasses import dataclass, field

from pytest_gpuverify.common.files import private_folder
from pytest_gpuverify.common.profile import PROFILE
from pytest_gpuverify.config.targets import SCRATCH_ROOT
from pytest_gpuverify.place.import_probe import Observed, install, probe_env, probe_folder, read_records, records_folder
from pytest_gpuverify.place.packages import UnderTest, origin_records, settle_imports
from pytest_gpuverify.records.artifact import ImportOrigin


@dataclass
class ImportsSeen:
    """What the run's own record settled: the origin each package was taken from, the records, the
    reasons (a copy outside the worktree) and notes."""

    imports: dict[str, str | None] = field(default_factory=dict)
    origins: dict[str, ImportOrigin] = field(default_factory=dict)
    reasons: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


class ImportProbe:
    """One run's probe: ``env`` for its command, then :meth:`settle` once it ended."""

    def __init__(self, facts, under: UnderTest | None, run_id: str) -> None:
        self.under, self.facts = under, facts
        self.records: str | None = None
        self.problem: str | None = None
        self.run_id = run_id
        self._reading: tuple[threading.Thread, list[Observed]] | None = None  # read_soon's thread, its answer

    def read_soon(self) -> None:
        """The command ended: its records are read back in a thread, alongside the engine's other reads
        in the place (each a process there); :meth:`settle` takes the answer."""
        if self.records is None or self._reading is not None or self.under is None or not self.under.names:
            return
        handle, folder, answer = self.facts.handle, self.records, []
        thread = threading.Thread(
            target=lambda: answer.append(read_records(handle, folder)), name="gpuverify-imports-read", daemon=True
        )
        thread.start()
        self._reading = (thread, answer)

    def _read(self) -> Observed:
        if self._reading is not None:
            thread, answer = self._reading
            thread.join()
            if answer:
                return answer[0]
        assert self.records is not None
        return read_records(self.facts.handle, self.records)

    def env(self, pythonpath: str) -> dict[str, str]:
        """The variables that load the probe in the command (none when there is nothing to record); the
        probe is put in place here, once per place and session: a run that never starts costs nothing."""
        if self.under is None or not self.under.names:
            return {}
        facts = self.facts
        scratch = str(private_folder().path) if facts.handle.place.on_host else SCRATCH_ROOT
        folder = probe_folder(scratch)
        if facts.import_probe != folder:
            with PROFILE.phase("import probe put in place"):
                self.problem = install(facts.handle, folder)
            if self.problem is not None:
                return {}
            facts.import_probe = folder
        self.records = records_folder(scratch, self.run_id)
        return probe_env(folder, self.records, self.under.names, pythonpath)

    def settle(
        self,
        predicted: dict[str, str | None],
        front: list[str],
        checkout: dict[str, str | None],
        wt: str,
        ran: bool,
        read: bool = True,
    ) -> ImportsSeen:
        """The run's record read back (and removed), set against the prediction; ``read=False``: the run
        was interrupted, nothing is read (its records are left in the place's scratch folder)."""
        under = self.under
        if under is None or not under.names:
            return ImportsSeen(imports=dict(predicted))
        observed: Observed | None = None
        if self.records is not None and ran and read:
            with PROFILE.phase("import records read back"):
                observed = self._read()
        why = self.problem or (
            None
            if ran and read
            else "the command never started"
            if not ran
            else "the run was interrupted before its records were read"
        )
        origins = origin_records(under, predicted, front, observed, why, checkout)
        imports, reasons, notes = settle_imports(origins, wt, under.required)
        return ImportsSeen(imports, origins, reasons, notes)
