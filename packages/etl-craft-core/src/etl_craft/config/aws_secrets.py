"""`Source_type: aws-secrets-manager`: secrets from AWS Secrets Manager (extra `aws`, boto3).

A variable named in craft-connector.yml is a secret's name (SecretId) and its SecretString is the
value. boto3 is imported on the first request, so nothing loads it unless this provider is
configured. Credentials come from boto3's usual chain (environment, shared files, instance or task
role). Each request waits at most Secrets.Timeout_seconds, once, without boto3's retries, so a
provider that does not answer stops the command quickly with a clear error instead of hanging.
"""

from __future__ import annotations

import logging
import os
import re
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from etl_craft.config.providers import ProviderSettings, SecretsProvider
from etl_craft.core.errors import ConfigurationError

_URL = re.compile(r"https?://[^\s/?#]+(?:/\S*)?")
_REGION = re.compile(r"[a-z]{2}(?:-[a-z]+)+-\d+")
_REMEDY_ANSWER = (
    "check that Secrets.Endpoint_url (or the region's endpoint) is reachable from this host, "
    "or raise Secrets.Timeout_seconds"
)


@contextmanager
def _botocore_quiet() -> Iterator[None]:
    """botocore logs each response body at DEBUG, the secret's value included, before etl-craft
    holds the value to mask it: while a secret is read, its loggers stay at WARNING at any level."""
    logger = logging.getLogger("botocore")
    level = logger.level
    logger.setLevel(max(level, logging.WARNING))
    try:
        yield
    finally:
        logger.setLevel(level)


class AwsSecretsManager(SecretsProvider):
    keys = ("Region", "Endpoint_url")

    def __init__(self, settings: ProviderSettings) -> None:
        super().__init__(settings)
        self.region = settings.options.get("Region")
        self.endpoint_url = settings.options.get("Endpoint_url")
        if self.region is not None and not _REGION.fullmatch(self.region):
            raise settings.error("Region", found=repr(self.region), expected="an AWS region such as eu-west-1")
        if self.endpoint_url is not None and not _URL.fullmatch(self.endpoint_url):
            raise settings.error(
                "Endpoint_url",
                found=repr(self.endpoint_url),
                expected="an http:// or https:// URL, e.g. https://secretsmanager.eu-west-1.amazonaws.com",
            )
        self._client: Any = None
        self._client_pid = 0

    @property
    def description(self) -> str:
        where = f"region {self.region}" if self.region else "the default region"
        return f"AWS Secrets Manager ({where}{f', at {self.endpoint_url}' if self.endpoint_url else ''})"

    def _error(self, found: str, expected: str, remedy: str) -> ConfigurationError:
        return ConfigurationError(f"Secrets: {self.description}", found=found, expected=expected, remedy=remedy)

    def _client_here(self) -> Any:
        """This process's client: a forked child makes its own rather than share its parent's sockets."""
        if self._client is not None and self._client_pid == os.getpid():
            return self._client
        try:
            import boto3
            from botocore.config import Config
        except ImportError:
            raise self._error(
                "boto3 is not installed",
                "boto3 for Source_type aws-secrets-manager",
                "install the extra: pip install 'etl-craft-core[aws]'",
            ) from None
        timeout = self.settings.timeout_seconds
        config = Config(connect_timeout=timeout, read_timeout=timeout, retries={"total_max_attempts": 1})
        session = boto3.session.Session()
        try:
            self._client = session.client(
                "secretsmanager", region_name=self.region, endpoint_url=self.endpoint_url, config=config
            )
        except Exception as error:  # botocore.exceptions.NoRegionError and the like
            raise self._error(
                f"{type(error).__name__}: {error}",
                "a region for AWS Secrets Manager",
                "set Secrets.Region (or AWS_REGION / AWS_DEFAULT_REGION)",
            ) from None
        self._client_pid = os.getpid()
        return self._client

    def get(self, name: str) -> str | None:
        from botocore import exceptions

        client = self._client_here()
        try:
            with _botocore_quiet():
                answer = client.get_secret_value(SecretId=name)
        except exceptions.ClientError as error:
            code = error.response.get("Error", {}).get("Code", "")
            if code == "ResourceNotFoundException":
                return None
            raise self._error(
                f"{code or 'an error'} reading secret {name}: {error.response.get('Error', {}).get('Message', '')}",
                "permission to read the secret (secretsmanager:GetSecretValue) and a usable secret",
                "grant the role access to the secret, or check its state in AWS Secrets Manager",
            ) from None
        except exceptions.NoCredentialsError:
            raise self._error(
                "no AWS credentials",
                "credentials from the environment, the shared files or an instance or task role",
                "set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, AWS_PROFILE, or give the host a role",
            ) from None
        except (exceptions.ConnectionError, exceptions.HTTPClientError) as error:
            raise self._error(
                f"no answer within {self.settings.timeout_seconds} s while reading secret {name} "
                f"({type(error).__name__})",
                "a Secrets Manager endpoint that answers",
                _REMEDY_ANSWER,
            ) from None
        if answer.get("SecretString") is None:
            raise self._error(
                f"secret {name} holds binary data (SecretBinary)",
                "a secret stored as text (SecretString)",
                "store the value as a text secret",
            )
        return str(answer["SecretString"])
