"""The message-signing keys reach who needs them and no one else: the app gets its private key
(a secure parameter, never an output) and the public key; the workers — the GPU pool's cloud-init
and the AKS manifests — get the public key only (docs/security.md, shared/signing)."""

from __future__ import annotations

from tests.infra.bicep_model import INFRA, Template, deployment
from tests.infra.offline_checks import AKS_VALUES


def test_the_private_key_is_a_secure_parameter_the_app_alone_receives() -> None:
    main, modules = deployment()
    assert "messageSigningKey" in main.parameters
    assert any(d["type"] == "secure" for d in main.parameters["messageSigningKey"]["decorators"])
    app = modules["functionApp"]
    assert any(d["type"] == "secure" for d in app.parameters["signingKey"]["decorators"])
    passed = {
        name
        for name, declaration in main.modules.items()
        if "messageSigningKey" in str(Template.body(declaration).get("params", {}))
    }
    assert passed == {"functionApp"}
    assert not any("messageSigningKey" in str(out) for out in main.outputs.values())


def test_the_app_reads_both_keys_from_its_settings() -> None:
    app = deployment()[1]["functionApp"]
    site = app.evaluate(Template.body(app.resources["functionApp"]))
    names = {entry["name"] for entry in site["properties"]["siteConfig"]["appSettings"]}
    assert {"DAGQ_SIGNING_KEY", "DAGQ_VERIFY_KEYS"} <= names


def test_workers_get_the_public_key_only() -> None:
    cloud_init = (INFRA / "cloud-init" / "worker.yaml").read_text()
    assert 'DAGQ_VERIFY_KEYS="{{verifyKeys}}"' in cloud_init
    assert "DAGQ_SIGNING_KEY" not in cloud_init
    pool = deployment()[1]["gpuPool"]
    assert "verifyKeys" in pool.parameters
    assert not any("sign" in name.lower() for name in pool.parameters)
    for manifest in (INFRA / "aks").glob("*.yaml"):
        text = manifest.read_text()
        assert "DAGQ_SIGNING_KEY" not in text, manifest.name
        if "kind: Deployment" in text or "kind: ScaledJob" in text:
            assert "${DAGQ_VERIFY_KEYS}" in text, manifest.name
    assert "DAGQ_VERIFY_KEYS" in AKS_VALUES
