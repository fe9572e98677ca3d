"""`collector retention`: the bucket's lifecycle rule on the real server expires the lake's
raw objects after N days, names nothing under runs/, and keeps the bucket's other rules.
(Expiry itself takes days: the server's taking the rule is what is tested here.)"""

from click.testing import CliRunner

from benchfleet.collector import cli
from collector.retention import rule_id, rules
from contract.objectstore import client
from tests.lakeserver import Lake


def retention(lake: Lake, *arguments: str) -> str:
    done = CliRunner().invoke(
        cli, ["retention", "--lake", str(lake.url), *arguments], env=lake.env()
    )
    assert done.exit_code == 0, done.output
    return done.output


def test_raw_objects_expire_after_the_days_set_and_other_rules_stay(lake: Lake) -> None:
    other = {
        "ID": "someone-elses",
        "Filter": {"Prefix": "elsewhere/"},
        "Status": "Enabled",
        "Expiration": {"Days": 3},
    }
    client(lake.env()).put_bucket_lifecycle_configuration(
        Bucket=lake.url.bucket, LifecycleConfiguration={"Rules": [other]}
    )
    said = retention(lake, "--raw-days", "7")
    assert f"s3://{lake.url.bucket}/{lake.url.prefix}/raw/ expire 7 days after" in said
    retention(lake, "--raw-days", "14")
    found = {rule["ID"]: rule for rule in rules(lake.url, lake.env())}
    assert found["someone-elses"]["Expiration"] == {"Days": 3}
    ours = found[rule_id(lake.url)]
    assert ours["Expiration"] == {"Days": 14}
    assert ours["Filter"] == {"Prefix": f"{lake.url.prefix}/raw/"}
    assert ours["Status"] == "Enabled"
    assert len(found) == 2


def test_days_out_of_bounds_are_refused_before_any_request(lake: Lake) -> None:
    done = CliRunner().invoke(
        cli, ["retention", "--lake", str(lake.url), "--raw-days", "0"], env=lake.env()
    )
    assert done.exit_code == 2
    assert "--raw-days" in done.output
