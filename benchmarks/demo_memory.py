"""Peak memory of ``bayesnb demo --data FILE`` beyond its imports, per size of the training matrix.

Issue 38's target: the peak resident memory beyond the imports within 5x the vectorised
training data (the CSR matrix's data + indices + indptr bytes). Each figure comes from a
process of its own (its VmHWM, Linux): the imports the demo needs, then the whole demo
writing its report to a temporary directory. Runs on the SMS Spam Collection and on a
6-group and a 20-group 20 Newsgroups file built in a temporary directory from the shared
archive (read in place; a data set that is absent is skipped with a message).

    python benchmarks/demo_memory.py [--groups 6,20] [--no-sms]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

DATA = Path(os.environ.get("BAYESNB_SHARED_DATA", Path(__file__).resolve().parents[2] / "shared" / "data"))
SMS = DATA / "sms_spam_collection" / "SMSSpamCollection"
NG = DATA / "20newsgroups_bydate" / "20news-bydate.tar.gz"
SIX = ("comp.graphics", "rec.autos", "rec.sport.hockey", "sci.med", "sci.space", "talk.politics.guns")

HWM = "print(next(int(l.split()[1]) for l in open('/proc/self/status') if l.startswith('VmHWM')) / 1024)"
IMPORTS = (
    "import bayesnb.cli.command, bayesnb.cli.report, bayesnb.estimators, bayesnb.analysis.comparison, "
    "bayesnb.analysis.uncertainty, bayesnb.analysis.plots, sklearn.feature_extraction.text, sklearn.calibration, "
    "sklearn.linear_model, sklearn.pipeline, sklearn.preprocessing, sklearn.naive_bayes, matplotlib.figure"
)
MATRIX = (
    "import sys, numpy as np; from sklearn.feature_extraction.text import CountVectorizer; "
    "from bayesnb.cli.userdata import labelled_texts, split; t, y = labelled_texts(sys.argv[1]); "
    "d, _, _, _ = split(np.asarray(t, dtype=object), y, 0.25, 0); X = CountVectorizer().fit_transform(d); "
    "print((X.data.nbytes + X.indices.nbytes + X.indptr.nbytes) / 2**20)"
)


def _child(code, *args):
    out = subprocess.run([sys.executable, "-c", code, *args], check=True, capture_output=True, text=True).stdout
    return float(out.split()[-1])


def newsgroups_file(groups, directory):
    """A ``label<TAB>text`` file of the bydate train + test posts of ``groups`` (None: all 20)."""
    path = Path(directory) / f"20ng_{len(groups) if groups else 20}.tsv"
    with tarfile.open(NG) as tar, open(path, "w", encoding="utf-8") as fh:
        for member in tar:
            parts = member.name.split("/")
            if not member.isfile() or len(parts) < 3 or (groups and parts[-2] not in groups):
                continue
            text = " ".join(tar.extractfile(member).read().decode("latin-1").split())
            fh.write(f"{parts[-2]}\t{text}\n")
    return path


def measure(path, imports_mib):
    matrix = _child(MATRIX, str(path))
    with tempfile.TemporaryDirectory() as out:
        demo = f"from bayesnb.cli.command import main; main(['demo', '--data', {str(path)!r}, '--out', {out!r}, '--force']); " + HWM
        peak = _child(demo)
    beyond = peak - imports_mib
    print(f"{path.name}: matrix {matrix:.2f} MiB, peak {peak:.0f} MiB, beyond imports {beyond:.0f} MiB "
          f"= {beyond / matrix:.1f}x the matrix (target 5x)", flush=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--groups", default="6,20", help="20 Newsgroups files to build: 6 and/or 20 groups")
    parser.add_argument("--no-sms", action="store_true")
    args = parser.parse_args()
    imports_mib = _child(IMPORTS + "; " + HWM)
    print(f"imports alone: {imports_mib:.0f} MiB")
    if args.no_sms:
        pass
    elif SMS.exists():
        measure(SMS, imports_mib)
    else:
        print(f"skipped SMS: {SMS} is absent")
    if not NG.exists():
        print(f"skipped 20 Newsgroups: {NG} is absent")
        return
    with tempfile.TemporaryDirectory() as tmp:
        for g in [int(s) for s in args.groups.split(",") if s]:
            measure(newsgroups_file(SIX if g == 6 else None, tmp), imports_mib)


if __name__ == "__main__":
    main()
