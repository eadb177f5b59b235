"""What the host's operator decides for live players: LLM credentials and endpoints (issue 14).

A joining player is untrusted. It may pick a credential by *name* from the operator's list, or
none; it never names an environment variable or a key, and it may name an LLM base URL only
when the operator allows that URL (then no key is sent). A credential's key goes to that
credential's own ``baseUrl`` only. HTTP players may be restricted to URL prefixes as well.

URLs written to disk (meta.json) are redacted by :func:`redact_url`: user info and the values
of token-like query parameters are replaced by ``REDACTED``.

The operator's file (``BDPD_OPERATOR`` for ``bdpd_jax.host.server:app_from_env``) is JSON::

    {"credentials": {"openai": {"baseUrl": "https://api.openai.com/v1", "apiKeyEnv": "OPENAI_API_KEY",
                                "models": ["gpt-4o-mini"]}},
     "llmBaseUrls": ["http://127.0.0.1:8000/v1"], "httpUrls": null,
     "llmEndpoints": [{"baseUrl": "http://127.0.0.1:8000/v1", "maxInFlight": 64, "requestsPerMinute": 600,
                       "maxRetries": 4}],
     "llmCacheDir": "runs/llm-cache"}

``llmEndpoints`` (issue 38) bound how hard this process's LLM players press each model server:
a call to a URL under an entry's ``baseUrl`` waits for one of its ``maxInFlight`` places (shared
by every arena of the process) and its ``requestsPerMinute`` spacing, and a 429 / 5xx answer is
retried up to ``maxRetries`` times within the player's deadline
(:mod:`~bdpd_jax.host.agents.llm_client`). ``llmCacheDir``: where the arenas' LLM response
caches live (default: each arena's own folder).
"""

from __future__ import annotations

import os
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from pydantic import ConfigDict, Field, SecretStr, ValidationError, field_validator, model_validator

from bdpd_jax.config.base import ConfigModel
from bdpd_jax.config.error_lines import pydantic_line
from bdpd_jax.config.files import MAX_CONFIG_BYTES, read_text
from bdpd_jax.config.limits import MAX_KEY_CHARS, Key, Label, Name, Url
from bdpd_jax.host.agents.transport import canonical_url

REDACTED = "REDACTED"
# query parameters whose values are secrets (compared lower-case, '-' read as '_')
SECRET_PARAMS: frozenset[str] = frozenset(
    {
        "token",
        "access_token",
        "refresh_token",
        "id_token",
        "auth",
        "authorization",
        "key",
        "apikey",
        "api_key",
        "secret",
        "client_secret",
        "password",
        "passwd",
        "pwd",
        "sig",
        "signature",
        "credential",
        "credentials",
        "session",
        "sessionid",
        "x_api_key",
        "code",
    }
)


def _check_url(field: str, url: Any) -> str:
    return str(canonical_url(url, field))


def redact_url(url: str) -> str:
    """``url`` with user info and token-like query values replaced by ``REDACTED``."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return REDACTED
    netloc = parts.netloc
    if "@" in netloc:
        netloc = f"{REDACTED}@{netloc.rsplit('@', 1)[1]}"
    query = parts.query
    if query:
        pairs = parse_qsl(query, keep_blank_values=True)
        query = urlencode([(k, REDACTED if _is_secret(k) else v) for k, v in pairs], safe=REDACTED)
    fragment = REDACTED if parts.fragment else ""
    return urlunsplit((parts.scheme, netloc, parts.path, query, fragment))


def _is_secret(name: str) -> bool:
    k = name.lower().replace("-", "_")
    return k in SECRET_PARAMS or k.endswith(("_token", "_key", "_secret", "_password"))


def url_allowed(url: str, prefixes: list[str]) -> bool:
    """True when ``url``, normalised exactly as the HTTP client will send it
    (``transport.canonical_url``: ``..``, ``.``, percent-encoding resolved), has the scheme,
    host and port of one prefix and its path under that prefix's path, segment by segment.
    One rule for LLM base URLs, HTTP players and governance agents; user info never passes."""
    try:
        u = canonical_url(url)
    except ValueError:
        return False
    if u.user is not None or u.password is not None:
        return False
    for p in prefixes:
        try:
            q = canonical_url(p)
        except ValueError:
            continue
        if (u.scheme, u.host, u.port) != (q.scheme, q.host, q.port):
            continue
        base = q.raw_path.rstrip("/")
        if not base or u.raw_path == base or u.raw_path.startswith(base + "/"):
            return True
    return False


class LLMCredential(ConfigModel):
    """One named credential: the endpoint its key may be sent to, and where the key comes from."""

    model_config = ConfigDict(extra="forbid")
    base_url: Url
    api_key_env: Key | None = Field(None, min_length=1)  # read at every call (rotation works)
    api_key: SecretStr | None = Field(None, max_length=MAX_KEY_CHARS)  # a literal key; never written anywhere
    models: list[Label] | None = None  # the models players may use; None: any

    @field_validator("base_url")
    @classmethod
    def _url(cls, v: str) -> str:
        return _check_url("baseUrl", v).rstrip("/")

    @model_validator(mode="after")
    def _one_key(self) -> LLMCredential:
        if self.api_key_env is not None and self.api_key is not None:
            raise ValueError("apiKey: give apiKeyEnv or apiKey, not both")
        return self


#: bounds of an endpoint's limits (a typo of 10**9 would silently mean "no limit")
MAX_IN_FLIGHT: int = 65536
MAX_REQUESTS_PER_MINUTE: float = 6e6


class LLMEndpoint(ConfigModel):
    """One model server's limits (docs/semantics/live/agents.md, operator's file): the calls of every
    arena of the process to a URL under ``baseUrl``."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)
    base_url: Url
    max_in_flight: int | None = Field(None, ge=1, le=MAX_IN_FLIGHT)  # None: no bound
    requests_per_minute: float | None = Field(None, gt=0, le=MAX_REQUESTS_PER_MINUTE)  # None: no bound
    max_retries: int = Field(3, ge=0, le=16)  # 429 / 5xx answers asked again, within the deadline

    @field_validator("base_url")
    @classmethod
    def _url(cls, v: str) -> str:
        return _check_url("baseUrl", v).rstrip("/")


class Operator(ConfigModel):
    """The operator's choices. The default lets players use no credential and no LLM endpoint of
    their own (an LLM player then cannot join), and HTTP players any http(s) URL."""

    model_config = ConfigDict(extra="forbid")
    credentials: dict[Name, LLMCredential] = Field(default_factory=dict)
    llm_base_urls: list[Url] = Field(default_factory=list)  # endpoints players may name (no key sent)
    http_urls: list[Url] | None = None  # HTTP players' URL prefixes; None: any
    llm_endpoints: list[LLMEndpoint] = Field(default_factory=list, max_length=256)  # limits per model server
    llm_cache_dir: str | None = Field(None, min_length=1, max_length=4096)  # LLM response caches (None: arena folders)

    @field_validator("llm_base_urls", "http_urls")
    @classmethod
    def _urls(cls, v: list[str] | None) -> list[str] | None:
        return None if v is None else [_check_url("url prefix", u) for u in v]

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> Operator:
        """Read the operator's JSON file (at most ``MAX_CONFIG_BYTES``: never read whole past
        it); ValueError naming the file and the bad field, one line: an unknown key (a typo)
        lists the valid keys with a "did you mean" (config/error_lines.py), not pydantic's text."""
        try:
            text = read_text(path, MAX_CONFIG_BYTES, "operator")
        except OSError as exc:  # unreadable (permissions, ...): missing and too large are ValueErrors
            raise ValueError(f"operator: cannot read {str(path)!r} ({exc.strerror or exc})") from None
        try:
            return cls.model_validate_json(text)
        except ValidationError as e:
            err = e.errors(include_url=False)[0]
            if err["type"] == "json_invalid":
                why = (err.get("ctx") or {}).get("error", err["msg"])
                raise ValueError(f"operator: {str(path)!r} is not valid JSON ({why})") from None
            more = f" [+{e.error_count() - 1} more]" if e.error_count() > 1 else ""
            line = pydantic_line(err, cls) if err["loc"] else f"must hold a JSON object, got {err['msg']}"
            raise ValueError(f"operator: {str(path)!r}: {line}{more}") from None

    def check_player(self, spec) -> None:
        """Refuse a joining player (or governance agent) that picks what only the operator may
        (ValueError): its kind's rule (``spec.player_kind``, a PlayerKind: check_operator)."""
        spec.player_kind.check_operator(spec, self)

    def check_http_url(self, url: str | None) -> None:
        """Refuse an HTTP agent's ``url`` outside the operator's allowed endpoints (when listed)."""
        if self.http_urls is not None and not url_allowed(str(url), self.http_urls):
            raise ValueError(f"url: {redact_url(str(url))!r} is not among the operator's allowed HTTP endpoints")

    def check_llm_choice(self, spec) -> None:
        """Refuse an LLM player's (or governance agent's) credential, endpoint or model the
        operator does not offer (ValueError naming the field)."""
        if spec.credential is not None:
            cred = self.credentials.get(spec.credential)
            if cred is None:
                raise ValueError(
                    f"credential: unknown credential {spec.credential!r}; the operator offers "
                    f"{sorted(self.credentials)}"
                )
            if spec.base_url is not None and _check_url("baseUrl", spec.base_url).rstrip("/") != cred.base_url:
                raise ValueError(
                    f"baseUrl: credential {spec.credential!r} is sent to its own endpoint only; omit baseUrl"
                )
            if cred.models is not None and spec.model not in cred.models:
                raise ValueError(f"model: credential {spec.credential!r} allows {cred.models}, got {spec.model!r}")
            return
        if spec.base_url is None:
            raise ValueError(
                "credential: an LLM player needs a credential name from the operator "
                f"({sorted(self.credentials)}) or an allowed baseUrl"
            )
        if not url_allowed(spec.base_url, self.llm_base_urls):
            raise ValueError(
                f"baseUrl: {redact_url(spec.base_url)!r} is not an endpoint the operator lets "
                "players choose; pick a credential name instead"
            )

    def endpoint_limits(self, base_url: str) -> LLMEndpoint | None:
        """The first ``llmEndpoints`` entry whose ``baseUrl`` ``base_url`` lies under (the
        allow-lists' rule, :func:`url_allowed`); None: the endpoint has no limits and no retries."""
        return next((e for e in self.llm_endpoints if url_allowed(base_url, [e.base_url])), None)

    def llm_endpoint(self, spec) -> dict[str, Any]:
        """``{base_url, api_key_env, api_key}`` for an LLM player already checked at join."""
        if spec.credential is None:
            return {"base_url": spec.base_url, "api_key_env": None, "api_key": None}
        cred = self.credentials[spec.credential]
        return {
            "base_url": cred.base_url,
            "api_key_env": cred.api_key_env,
            "api_key": None if cred.api_key is None else cred.api_key.get_secret_value(),
        }


__all__ = ["LLMCredential", "LLMEndpoint", "Operator", "REDACTED", "redact_url", "url_allowed"]
