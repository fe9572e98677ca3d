"""What the renderers say of a report beyond its tables of numbers, worked out once: the
verdict on the run, the answer per sweep and what everything cost. Every format of a report
(text, Markdown, JSON, the web page) renders one `Analysis`, so none computes these again,
and a new figure is a field here, not a computation in each writer; the CSV, whose rows carry
costs only, takes `costs` alone."""

from dataclasses import dataclass

from report.answers import Answer, answers
from report.cheapest import CheapestHolder, cheapest_holders
from report.control import ControlAnswer, control_answers
from report.cost import Costs, costs
from report.model import Report
from report.params import ParamComparison, param_comparisons
from report.verdict import RunVerdict, run_verdict


@dataclass(frozen=True)
class Analysis:
    """A report and what it decides."""

    report: Report
    control: tuple[ControlAnswer, ...]
    """Whether each fixed-rate variant held its rate: the first thing a report says."""
    cheapest: tuple[CheapestHolder, ...]
    """Per model and rate, the cheapest target and configuration that held it."""
    verdict: RunVerdict
    answers: tuple[Answer, ...]
    costs: Costs
    params: tuple[ParamComparison, ...] = ()
    """Each family's members along each param (report/params.py)."""


def analyse(report: Report) -> Analysis:
    """`report` with its verdict, answers and costs."""
    control = control_answers(report)
    found = costs(report)
    return Analysis(
        report=report,
        control=control,
        cheapest=cheapest_holders(control, found),
        verdict=run_verdict(report),
        answers=answers(report),
        costs=found,
        params=param_comparisons(report.variants),
    )
