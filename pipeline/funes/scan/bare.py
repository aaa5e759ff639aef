"""Secrets recognised by shape plus what surrounds them, where no assignment names them: a cloud
secret key quoted in prose or reasoning, provider-named UUID/hex keys, and a value that follows a
secret name in shell or prose (`set -x API_TOKEN 3f…`, `the DEPLOY_TOKEN is 3f…`)."""

from __future__ import annotations

import itertools
import re

from funes.scan.names import secret_name
from funes.scan.values import entropy, placeholder, random_enough
from funes.scan.windows import own_text, word_windows

# A 40-char run of the AWS secret-key alphabet, bounded on both sides (a longer base64 run is
# another thing). The lookbehind makes every non-start position fail at once.
# `-`, `_` and a leading `.` bound it too: a piece of a URL-safe token or a JWT segment is no key.
_KEY40 = re.compile(r"(?<![A-Za-z0-9/+=_.\-])[A-Za-z0-9/+]{40}(?![A-Za-z0-9/+=_\-])")
_CLOUD_WORDS = ("aws", "secret", "access key", "credential", "akia", "asia", "iam", "s3", "boto")


def _classes_change(v: str) -> int:
    kind = [0 if c.isupper() else 1 if c.islower() else 2 if c.isdigit() else 3 for c in v]
    return sum(a != b for a, b in itertools.pairwise(kind))


def cloud_key(v: str) -> bool:
    """Looks like a machine-made 40-char key (AWS secret access key), not a path, a word run or
    an identifier: all three classes, high entropy, and case flips a path or camelCase lacks."""
    return (
        any(c.isupper() for c in v)
        and any(c.islower() for c in v)
        and any(c.isdigit() for c in v)
        and entropy(v) >= 4.2
        and _classes_change(v) >= 18
        and "//" not in v
    )


def cloud_key_findings(text: str, low: str) -> list[tuple[str, int, int]]:
    """Bare 40-char secret keys anywhere: with a `/` or `+` the shape alone is enough (no hash,
    id or word run has it at exactly 40); without, a cloud/secret word must be in the text."""
    out = []
    for m in _KEY40.finditer(text):
        v = m.group()
        if not cloud_key(v) or placeholder(v):
            continue
        near = low[slice(*own_text(text, m.start(), m.end(), 4000))]
        if "/" in v or "+" in v or any(w in near for w in _CLOUD_WORDS):
            out.append(("AWS" if "aws" in near or "akia" in near else "Secret", *m.span()))
    return out


_UUID = re.compile(
    r"(?<![0-9A-Za-z-])[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}(?![0-9A-Za-z-])"
)
_HEX32 = re.compile(r"(?<![0-9A-Za-z_-])[0-9a-f]{32}(?![0-9A-Za-z_-])|(?<![0-9A-Za-z_-])[0-9A-F]{32}(?![0-9A-Za-z_-])")
_KEY_WORDS = re.compile(r"(?i)\b(?:api[ _-]?key|apikey|key|token|secret|password|passwd|credential|creds|auth|pat)s?\b")
# an id-ish word between the key word and the value means the value is that id, not the key
_ID_WORDS = re.compile(
    r"(?i)\b(?:id|ids|uuid|guid|identifier|tenant|subscription|object|request|session|trace|span|"
    r"account|user|org|organization|project|workspace|team|run|job|build|commit|sha|hash|digest|"
    r"checksum|md5|etag|version|revision|order|invoice|customer|device|instance|resource|region)\b"
)
_PROVIDERS = {
    "heroku": "Heroku",
    "snyk": "Snyk",
    "datadog": "Datadog",
    "newrelic": "NewRelic",
    "new relic": "NewRelic",
    "pagerduty": "PagerDuty",
    "sentry": "Sentry",
    "fastly": "Fastly",
    "algolia": "Algolia",
    "mailgun": "Mailgun",
    "mailchimp": "Mailchimp",
    "postman": "Postman",
    "circleci": "CircleCI",
    "travis": "Travis",
    "bitbucket": "Bitbucket",
    "atlassian": "Atlassian",
    "jira": "Atlassian",
    "linode": "Linode",
    "vultr": "Vultr",
    "hetzner": "Hetzner",
    "digitalocean": "DigitalOcean",
    "cloudflare": "Cloudflare",
    "netlify": "Netlify",
    "vercel": "Vercel",
    "railway": "Railway",
    "supabase": "Supabase",
    "firebase": "Firebase",
    "mapbox": "Mapbox",
    "mongodb": "MongoDB",
    "okta": "Okta",
    "auth0": "Auth0",
    "twilio": "Twilio",
    "sendgrid": "SendGrid",
    "azure": "Azure",
    "aws": "AWS",
    "gcp": "GCP",
    "google": "Google",
    "github": "GitHub",
    "gitlab": "GitLab",
    "npm": "npm",
    "docker": "Docker",
    "onesignal": "OneSignal",
    "segment": "Segment",
    "mixpanel": "Mixpanel",
    "amplitude": "Amplitude",
    "launchdarkly": "LaunchDarkly",
    "rollbar": "Rollbar",
    "bugsnag": "Bugsnag",
    "honeycomb": "Honeycomb",
    "grafana": "Grafana",
    "codecov": "Codecov",
    "coveralls": "Coveralls",
    "browserstack": "BrowserStack",
    "saucelabs": "SauceLabs",
    "contentful": "Contentful",
    "hubspot": "HubSpot",
    "zendesk": "Zendesk",
    "intercom": "Intercom",
    "airtable": "Airtable",
    "asana": "Asana",
    "trello": "Trello",
    "clickup": "ClickUp",
    "shopify": "Shopify",
    "paypal": "PayPal",
    "braintree": "Braintree",
    "plaid": "Plaid",
    "coinbase": "Coinbase",
    "binance": "Binance",
    "openweather": "OpenWeather",
    "weatherapi": "WeatherAPI",
    "nasa": "NASA",
    "elastic": "Elastic",
    "splunk": "Splunk",
    "sumo": "SumoLogic",
    "loggly": "Loggly",
    "papertrail": "Papertrail",
    "terraform": "HashiCorp",
    "vault": "Vault",
    "consul": "HashiCorp",
    "octopus": "Octopus",
    "sonar": "Sonar",
    "jfrog": "JFrog",
    "artifactory": "JFrog",
    "nuget": "NuGet",
    "rubygems": "RubyGems",
}
_PROVIDER_RE = re.compile(r"(?i)\b(" + "|".join(sorted(map(re.escape, _PROVIDERS), key=len, reverse=True)) + r")")


def _line_window(text: str, s: int, e: int, before: int = 160, after: int = 100) -> tuple[int, int]:
    ws = max(text.rfind("\n", max(0, s - before), s) + 1, s - before, 0)
    we = text.find("\n", e, e + after)
    return ws, (min(len(text), e + after) if we < 0 else we)


def provider_key_findings(text: str, low: str) -> list[tuple[str, int, int]]:
    """A UUID (or 32-hex) key whose line names a provider and a key word, with no id-ish word
    between the key word and the value (`Heroku API key: <uuid>`, not `tenant id: <uuid>`)."""
    out = []
    near_key_words = word_windows(text, low, ("key", "token", "secret", "pass", "cred", "auth", "pat"), 100, 130)
    for rx, (ws0, we0) in ((rx, w) for w in near_key_words for rx in (_UUID, _HEX32)):
        for m in rx.finditer(text, ws0, we0):
            ws, we = _line_window(text, *m.span())
            before, after = text[ws : m.start()], text[m.end() : we]
            provider = _PROVIDER_RE.search(before) or _PROVIDER_RE.search(after)
            if not provider:
                continue
            keys = list(_KEY_WORDS.finditer(before))
            if keys:
                between = before[keys[-1].end() :]
                named = not _ID_WORDS.search(between) and len(between) <= 60
            else:
                k = _KEY_WORDS.search(after)
                named = k is not None and k.start() <= 60 and not _ID_WORDS.search(after[: k.start()])
            if named and not placeholder(m.group()) and len(set(m.group().replace("-", ""))) >= 8:
                out.append((_PROVIDERS[provider.group(1).lower()], *m.span()))
    return out


# `set -x NAME value`, `setenv NAME value`, `NAME is value`, `NAME -> value`, `NAME: value` in prose
_NAME_THEN_VALUE = re.compile(
    r"(?<![A-Za-z0-9_$.\-])(?P<name>[A-Za-z_][A-Za-z0-9_]*(?:_[A-Za-z0-9]+)+|[a-z]+(?:[A-Z][a-z0-9]+)+)"
    r"[\"'`]?(?:\s+(?:is|was|to|as|of)\s+|\s*(?:->|→|=>|:=|:|=)\s*|[ \t]+)"
    r"[\"'`]?(?P<v>[A-Za-z0-9+/_\-.~]{16,}={0,2})(?![A-Za-z0-9+/_\-.~=])"
)


def named_value_findings(text: str, low: str) -> list[tuple[str, int, int]]:
    """A machine-made value right after a secret name, however it is joined to it."""
    out = []
    for ws, we in word_windows(text, low, ("token", "secret", "key", "pass", "pwd", "auth", "cred"), 70, 200):
        for m in _NAME_THEN_VALUE.finditer(text, ws, we):
            kind = secret_name(m.group("name"))
            v = m.group("v")
            if kind and not placeholder(v) and (random_enough(v) or re.fullmatch(r"[0-9a-fA-F]{32,}", v)):
                out.append((kind, *m.span("v")))
    return out


# every finding starts with a match of one of these (`gate.py`)
NECESSARY: list[re.Pattern | str] = [_KEY40, _UUID, _HEX32, _NAME_THEN_VALUE]


def findings(text: str, low: str) -> list[tuple[str, int, int]]:
    return cloud_key_findings(text, low) + provider_key_findings(text, low) + named_value_findings(text, low)
