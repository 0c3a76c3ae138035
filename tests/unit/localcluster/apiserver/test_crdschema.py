"""CRD validation and defaults, and custom resources against their structural schema."""

from __future__ import annotations

import copy
from typing import Any

import pytest
import yaml

from nrop.api.status import Cause
from nrop.localcluster.apiserver.crd import schema as crdschema
from nrop.localcluster.apiserver.crd.structural import CustomResourceSchema
from nrop.localcluster.apiserver.crd.violations import schema_violations
from nrop.localcluster.apiserver.errors import Invalid, cause_text

SCHEMA_PATH = "spec.versions[0].schema.openAPIV3Schema"

WIDGET_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "apiVersion": {"type": "string"},
        "kind": {"type": "string"},
        "metadata": {"type": "object"},
        "spec": {
            "type": "object",
            "properties": {
                "replicas": {"type": "integer", "minimum": 0, "maximum": 10},
                "color": {"type": "string"},
            },
        },
        "status": {"type": "object", "properties": {"replicas": {"type": "integer"}}},
    },
}


def widget_crd(**changes: Any) -> dict[str, Any]:
    crd: dict[str, Any] = {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.com"},
        "spec": {
            "group": "example.com",
            "scope": "Namespaced",
            "names": {"plural": "widgets", "kind": "Widget", "shortNames": ["wd"]},
            "versions": [
                {
                    "name": "v1",
                    "served": True,
                    "storage": True,
                    "schema": {"openAPIV3Schema": copy.deepcopy(WIDGET_SCHEMA)},
                }
            ],
        },
    }
    for dotted, value in changes.items():
        node = crd
        *parents, last = dotted.split("__")
        for part in parents:
            node = node[int(part)] if isinstance(node, list) else node.setdefault(part, {})
        if isinstance(node, list):
            node[int(last)] = value
        elif value is _DELETE:
            node.pop(last, None)
        else:
            node[last] = value
    return crd


_DELETE = object()


def texts(causes: list[Cause]) -> list[str]:
    return [cause_text(c) for c in causes]


# --- CRD validation ---------------------------------------------------------------------------------


def _with_schema(schema: dict[str, Any]) -> dict[str, Any]:
    return widget_crd(spec__versions__0__schema={"openAPIV3Schema": schema})


def _second_version(**entry: Any) -> dict[str, Any]:
    crd = widget_crd()
    crd["spec"]["versions"].append({"name": "v2", "schema": {"openAPIV3Schema": {"type": "object"}}, **entry})
    return crd


@pytest.mark.parametrize(
    ("crd", "expected"),
    [
        pytest.param(widget_crd(), [], id="valid"),
        pytest.param(
            widget_crd(metadata__name="widget.example.com"),
            ['metadata.name: Invalid value: "widget.example.com": must be spec.names.plural+"."+spec.group'],
            id="name-mismatch",
        ),
        pytest.param(
            widget_crd(spec__group="example", metadata__name="widgets.example"),
            ['spec.group: Invalid value: "example": should be a domain with at least one dot'],
            id="group-without-dot",
        ),
        pytest.param(
            widget_crd(spec__scope="Global"),
            ['spec.scope: Unsupported value: "Global": supported values: "Cluster", "Namespaced"'],
            id="bad-scope",
        ),
        pytest.param(
            widget_crd(spec__scope=_DELETE),
            ["spec.scope: Required value"],
            id="missing-scope",
        ),
        pytest.param(
            widget_crd(spec__versions__0__schema=_DELETE),
            [f"{SCHEMA_PATH}: Required value: schemas are required"],
            id="missing-schema",
        ),
        pytest.param(
            widget_crd(spec__names__kind="Widget", spec__names__listKind="Widget"),
            ['spec.names.listKind: Invalid value: "Widget": kind and listKind may not be the same'],
            id="kind-equals-listkind",
        ),
        pytest.param(
            widget_crd(spec__preserveUnknownFields=True),
            [
                "spec.preserveUnknownFields: Invalid value: true: cannot set to true, set "
                "x-kubernetes-preserve-unknown-fields to true in spec.versions[*].schema instead"
            ],
            id="preserve-unknown-fields-at-spec",
        ),
        pytest.param(
            widget_crd(
                spec__versions__0__additionalPrinterColumns=[
                    {"name": "Replicas", "type": "float", "jsonPath": ".spec.replicas"}
                ]
            ),
            [
                'spec.versions[0].additionalPrinterColumns[0].type: Invalid value: "float": '
                "must be one of boolean,date,integer,number,string"
            ],
            id="printer-column-bad-type",
        ),
        pytest.param(
            widget_crd(spec__versions__0__additionalPrinterColumns=[{"name": "Replicas", "type": "integer"}]),
            ["spec.versions[0].additionalPrinterColumns[0].jsonPath: Required value"],
            id="printer-column-no-jsonpath",
        ),
        pytest.param(
            widget_crd(
                spec__versions__0__additionalPrinterColumns=[
                    {"name": "Replicas", "type": "integer", "jsonPath": "spec.replicas"}
                ]
            ),
            [
                'spec.versions[0].additionalPrinterColumns[0].jsonPath: Invalid value: "spec.replicas": '
                "must be a simple json path starting with ."
            ],
            id="printer-column-path-without-dot",
        ),
        pytest.param(
            widget_crd(
                spec__versions__0__subresources={
                    "scale": {
                        "specReplicasPath": ".status.replicas",
                        "statusReplicasPath": ".status.replicas",
                    }
                }
            ),
            [
                'spec.versions[0].subresources.scale.specReplicasPath: Invalid value: ".status.replicas": '
                "should be a json path under .spec"
            ],
            id="scale-spec-path-outside-spec",
        ),
        pytest.param(
            widget_crd(spec__versions__0__subresources={"scale": {"statusReplicasPath": ".status.replicas"}}),
            ["spec.versions[0].subresources.scale.specReplicasPath: Required value"],
            id="scale-missing-spec-path",
        ),
        pytest.param(
            widget_crd(
                spec__versions__0__selectableFields=[{"jsonPath": ".spec.color"}, {"jsonPath": ".spec.color"}]
            ),
            ['spec.versions[0].selectableFields[1].jsonPath: Duplicate value: ".spec.color"'],
            id="selectable-field-duplicate",
        ),
        pytest.param(
            widget_crd(spec__versions__0__selectableFields=[{"jsonPath": ".status"}]),
            [
                'spec.versions[0].selectableFields[0].jsonPath: Invalid value: ".status": must point to a field '
                "of type string, boolean or integer. Enum string fields and strings with formats are allowed."
            ],
            id="selectable-field-object",
        ),
        pytest.param(
            widget_crd(spec__names__plural="Widgets", metadata__name="Widgets.example.com"),
            [
                'metadata.name: Invalid value: "Widgets.example.com": a lowercase RFC 1123 subdomain must consist '
                "of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric "
                "character (e.g. 'example.com', regex used for validation is "
                "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')",
                'spec.names.plural: Invalid value: "Widgets": a DNS-1035 label must consist of lower case '
                "alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric "
                "character (e.g. 'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')",
            ],
            id="uppercase-plural",
        ),
        pytest.param(
            widget_crd(spec__conversion={"strategy": "Webhook"}),
            ["spec.conversion.webhook: Required value: required when strategy is set to Webhook"],
            id="webhook-without-config",
        ),
    ],
)
def test_validate_crd(crd: dict[str, Any], expected: list[str]) -> None:
    assert texts(crdschema.validate_crd(crd)) == expected


@pytest.mark.parametrize(
    ("crd", "message"),
    [
        pytest.param(
            _second_version(served=True, storage=True),
            "must have exactly one version marked as storage version",
            id="two-storage-versions",
        ),
        pytest.param(
            widget_crd(spec__versions__0__storage=False),
            "must have exactly one version marked as storage version",
            id="no-storage-version",
        ),
        pytest.param(
            _second_version(served=True, storage=False),
            None,
            id="second-version-ok",
        ),
    ],
)
def test_validate_crd_versions(crd: dict[str, Any], message: str | None) -> None:
    causes = crdschema.validate_crd(crd)
    if message is None:
        assert causes == []
        return
    assert [(c.field, c.reason) for c in causes] == [("spec.versions", "FieldValueInvalid")]
    assert causes[0].message.startswith("Invalid value: [")
    assert causes[0].message.endswith(f": {message}")


def test_validate_crd_duplicate_version_names() -> None:
    crd = _second_version(served=True, storage=False)
    crd["spec"]["versions"][1]["name"] = "v1"
    assert [c.message.rsplit(": ", 1)[1] for c in crdschema.validate_crd(crd)] == [
        "must contain unique version names"
    ]


def test_validate_crd_accepts_unserved_only() -> None:
    # upstream does not require a served version
    assert crdschema.validate_crd(widget_crd(spec__versions__0__served=False)) == []


def test_validate_crd_renders_as_invalid_status() -> None:
    causes = crdschema.validate_crd(widget_crd(metadata__name="wrong.example.com"))
    err = Invalid.for_fields("CustomResourceDefinition", "apiextensions.k8s.io", "wrong.example.com", causes)
    assert err.message == (
        'CustomResourceDefinition.apiextensions.k8s.io "wrong.example.com" is invalid: metadata.name: '
        'Invalid value: "wrong.example.com": must be spec.names.plural+"."+spec.group'
    )


# --- structural schemas -----------------------------------------------------------------------------


def _obj(**props: Any) -> dict[str, Any]:
    return {"type": "object", "properties": props}


@pytest.mark.parametrize(
    ("schema", "expected"),
    [
        pytest.param(
            _obj(spec={"properties": {"a": {"type": "string"}}}),
            [
                f"{SCHEMA_PATH}.properties[spec].type: Required value: must not be empty for specified object fields"
            ],
            id="field-without-type",
        ),
        pytest.param(
            {"properties": {}},
            [f"{SCHEMA_PATH}.type: Required value: must not be empty at the root"],
            id="root-without-type",
        ),
        pytest.param(
            {"type": "string"},
            [f'{SCHEMA_PATH}.type: Invalid value: "string": must be object at the root'],
            id="root-not-object",
        ),
        pytest.param(
            _obj(list={"type": "array"}),
            [f"{SCHEMA_PATH}.properties[list].items: Required value: must be specified"],
            id="array-without-items",
        ),
        pytest.param(
            _obj(list={"type": "array", "items": {"properties": {}}}),
            [
                f"{SCHEMA_PATH}.properties[list].items.type: Required value: "
                "must not be empty for specified array items"
            ],
            id="items-without-type",
        ),
        pytest.param(
            _obj(metadata={"type": "object", "properties": {"labels": {"type": "object"}}}),
            [
                f"{SCHEMA_PATH}.properties[metadata]: Forbidden: must not specify anything other than name "
                "and generateName, but metadata is implicitly specified"
            ],
            id="metadata-beyond-name",
        ),
        pytest.param(
            _obj(metadata={"type": "object", "properties": {"name": {"type": "string", "maxLength": 10}}}),
            [],
            id="metadata-name-only",
        ),
        pytest.param(
            _obj(spec={"type": "object", "anyOf": [{"type": "object"}]}),
            [f"{SCHEMA_PATH}.properties[spec].anyOf[0].type: Forbidden: must be empty to be structural"],
            id="type-in-anyof",
        ),
        pytest.param(
            _obj(
                spec={"type": "object", "oneOf": [{"required": ["a"]}, {"properties": {"b": {"minimum": 1}}}]}
            ),
            [
                f"{SCHEMA_PATH}.properties[spec].properties[b]: Required value: because it is defined in "
                f"{SCHEMA_PATH}.properties[spec].oneOf[1].properties[b]"
            ],
            id="value-validation-field-not-in-structure",
        ),
        pytest.param(
            _obj(q={"x-kubernetes-int-or-string": True, "anyOf": [{"type": "integer"}, {"type": "string"}]}),
            [],
            id="int-or-string-pattern",
        ),
        pytest.param(
            _obj(free={"x-kubernetes-preserve-unknown-fields": True}),
            [],
            id="preserve-unknown-without-type",
        ),
        pytest.param(
            _obj(
                m={
                    "type": "object",
                    "properties": {"a": {"type": "string"}},
                    "additionalProperties": {"type": "string"},
                }
            ),
            [
                f"{SCHEMA_PATH}.properties[m].additionalProperties: Forbidden: "
                "additionalProperties and properties are mutual exclusive"
            ],
            id="properties-and-additional-properties",
        ),
        pytest.param(
            _obj(tags={"type": "array", "items": {"type": "string"}, "uniqueItems": True}),
            [
                f"{SCHEMA_PATH}.properties[tags].uniqueItems: Forbidden: uniqueItems cannot be set to true "
                "since the runtime complexity becomes quadratic"
            ],
            id="unique-items",
        ),
        pytest.param(
            _obj(x={"type": "object", "x-kubernetes-preserve-unknown-fields": False}),
            [
                f"{SCHEMA_PATH}.properties[x].x-kubernetes-preserve-unknown-fields: Invalid value: false: must be true or undefined"
            ],
            id="preserve-false",
        ),
        pytest.param(
            _obj(x={"$ref": "#/definitions/X", "type": "object"}),
            [f"{SCHEMA_PATH}.properties[x].$ref: Forbidden: $ref is not supported"],
            id="ref",
        ),
        pytest.param(
            _obj(t={"type": "object", "x-kubernetes-embedded-resource": True}),
            [
                f"{SCHEMA_PATH}.properties[t].properties: Required value: must not be empty if "
                "x-kubernetes-embedded-resource is true without x-kubernetes-preserve-unknown-fields"
            ],
            id="embedded-without-properties",
        ),
        pytest.param(
            _obj(
                ports={
                    "type": "array",
                    "x-kubernetes-list-type": "map",
                    "items": _obj(port={"type": "integer"}),
                }
            ),
            [
                f"{SCHEMA_PATH}.properties[ports].x-kubernetes-list-map-keys: Required value: "
                "must not be empty if x-kubernetes-list-type is map"
            ],
            id="list-map-without-keys",
        ),
        pytest.param(
            _obj(n={"type": "integer", "default": "three"}),
            [
                f'{SCHEMA_PATH}.properties[n].default: Invalid value: "string": {SCHEMA_PATH}.properties[n].default '
                'in body must be of type integer: "string"'
            ],
            id="default-of-wrong-type",
        ),
        pytest.param(
            _obj(n={"type": "integer", "minimum": 1, "default": 1}),
            [],
            id="valid-default",
        ),
    ],
)
def test_schema_violations(schema: dict[str, Any], expected: list[str]) -> None:
    assert texts(schema_violations(schema, SCHEMA_PATH)) == expected


def test_non_structural_schema_rejects_the_crd() -> None:
    crd = _with_schema(_obj(spec={"properties": {}}))
    assert texts(crdschema.validate_crd(crd)) == [
        f"{SCHEMA_PATH}.properties[spec].type: Required value: must not be empty for specified object fields"
    ]


# --- defaults and views -----------------------------------------------------------------------------


def test_crd_defaults() -> None:
    crd = widget_crd()
    out = crdschema.crd_defaults(crd)
    assert out["spec"]["names"] == {
        "plural": "widgets",
        "kind": "Widget",
        "shortNames": ["wd"],
        "singular": "widget",
        "listKind": "WidgetList",
    }
    assert out["spec"]["conversion"] == {"strategy": "None"}
    assert "singular" not in crd["spec"]["names"], "the input is not modified"


def test_crd_defaults_keep_given_names_and_default_webhook_port() -> None:
    crd = widget_crd(
        spec__names__singular="wdgt",
        spec__conversion={
            "strategy": "Webhook",
            "webhook": {
                "clientConfig": {"service": {"name": "s", "namespace": "n"}},
                "conversionReviewVersions": ["v1"],
            },
        },
    )
    out = crdschema.crd_defaults(crd)
    assert out["spec"]["names"]["singular"] == "wdgt"
    assert out["spec"]["conversion"]["webhook"]["clientConfig"]["service"]["port"] == 443


def test_accepted_names() -> None:
    assert crdschema.accepted_names(widget_crd()) == {
        "plural": "widgets",
        "singular": "widget",
        "shortNames": ["wd"],
        "kind": "Widget",
        "listKind": "WidgetList",
    }


@pytest.mark.parametrize(
    ("columns", "expected"),
    [
        pytest.param(
            None,
            [
                {
                    "name": "Age",
                    "type": "date",
                    "format": "",
                    "description": "CreationTimestamp is a timestamp representing the server time when this "
                    "object was created.",
                    "priority": 0,
                    "jsonPath": ".metadata.creationTimestamp",
                }
            ],
            id="default-age",
        ),
        pytest.param(
            [{"name": "Replicas", "type": "integer", "jsonPath": ".spec.replicas"}],
            [
                {
                    "name": "Replicas",
                    "type": "integer",
                    "format": "",
                    "description": "",
                    "priority": 0,
                    "jsonPath": ".spec.replicas",
                }
            ],
            id="declared-no-age-added",
        ),
    ],
)
def test_printer_columns(columns: list[dict[str, Any]] | None, expected: list[dict[str, Any]]) -> None:
    crd = widget_crd() if columns is None else widget_crd(spec__versions__0__additionalPrinterColumns=columns)
    assert crdschema.printer_columns(crd, "v1") == expected


def test_version_views() -> None:
    crd = widget_crd(
        spec__versions__0__subresources={
            "status": {},
            "scale": {"specReplicasPath": ".spec.replicas", "statusReplicasPath": ".status.replicas"},
        },
        spec__versions__0__selectableFields=[{"jsonPath": ".spec.color"}],
    )
    for name, storage in (("v1beta1", False), ("v2", False), ("v1alpha1", False)):
        crd["spec"]["versions"].append({"name": name, "served": True, "storage": storage})
    crd["spec"]["versions"].append({"name": "v3", "served": False, "storage": False})
    assert crdschema.storage_version(crd) == "v1"
    assert crdschema.served_versions(crd) == ["v2", "v1", "v1beta1", "v1alpha1"]
    assert crdschema.has_status_subresource(crd, "v1")
    assert not crdschema.has_status_subresource(crd, "v2")
    assert crdschema.scale_subresource(crd, "v1") == {
        "specReplicasPath": ".spec.replicas",
        "statusReplicasPath": ".status.replicas",
    }
    assert crdschema.selectable_fields(crd, "v1") == {"spec.color": ".spec.color"}
    assert crdschema.version_entry(crd, "nope") is None
    assert (
        crdschema.custom_resource_schema(crd, "v1").source
        is crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    )


def test_sort_versions() -> None:
    names = ["foo10", "v11alpha2", "v10", "foo1", "v3beta1", "v12alpha1", "v10beta3", "v1", "v11beta2", "v2"]
    assert crdschema.sort_versions(names) == [
        "v10",
        "v2",
        "v1",
        "v11beta2",
        "v10beta3",
        "v3beta1",
        "v12alpha1",
        "v11alpha2",
        "foo1",
        "foo10",
    ]


# --- pruning ----------------------------------------------------------------------------------------

PRUNE_SCHEMA = _obj(
    apiVersion={"type": "string"},
    kind={"type": "string"},
    metadata={"type": "object"},
    spec=_obj(
        size={"type": "integer"},
        nested=_obj(a={"type": "string"}),
        items={"type": "array", "items": _obj(name={"type": "string"})},
        free={
            "type": "object",
            "x-kubernetes-preserve-unknown-fields": True,
            "properties": {"known": _obj()},
        },
        labels={"type": "object", "additionalProperties": {"type": "string"}},
        maps={"type": "object", "additionalProperties": _obj(x={"type": "integer"})},
        anything={"type": "object", "additionalProperties": True},
        template={
            "type": "object",
            "x-kubernetes-embedded-resource": True,
            "properties": {"spec": _obj(image={"type": "string"})},
        },
        quantity={"x-kubernetes-int-or-string": True, "anyOf": [{"type": "integer"}, {"type": "string"}]},
    ),
)


@pytest.mark.parametrize(
    ("spec", "kept", "removed"),
    [
        pytest.param({"size": 1, "foo": 2}, {"size": 1}, ["spec.foo"], id="unknown-field"),
        pytest.param(
            {"nested": {"a": "x", "b": "y"}, "items": [{"name": "n", "bad": 1}, {"bad": 2}]},
            {"nested": {"a": "x"}, "items": [{"name": "n"}, {}]},
            ["spec.nested.b", "spec.items[0].bad", "spec.items[1].bad"],
            id="nested-and-array-items",
        ),
        pytest.param(
            {"free": {"whatever": {"deep": 1}, "known": {"drop": 1}}},
            {"free": {"whatever": {"deep": 1}, "known": {}}},
            ["spec.free.known.drop"],
            id="preserve-unknown-fields",
        ),
        pytest.param(
            {"labels": {"a": "b"}, "maps": {"k": {"x": 1, "y": 2}}},
            {"labels": {"a": "b"}, "maps": {"k": {"x": 1}}},
            ["spec.maps.k.y"],
            id="additional-properties",
        ),
        pytest.param(
            {"anything": {"k": "v", "o": {"drop": 1}}},
            {"anything": {"k": "v", "o": {}}},
            ["spec.anything.o.drop"],
            id="additional-properties-true",
        ),
        pytest.param(
            {
                "template": {
                    "apiVersion": "v1",
                    "kind": "Pod",
                    "metadata": {"name": "p", "labels": {"a": "b"}, "bogus": 1},
                    "spec": {"image": "i", "extra": 1},
                    "status": {},
                }
            },
            {
                "template": {
                    "apiVersion": "v1",
                    "kind": "Pod",
                    "metadata": {"name": "p", "labels": {"a": "b"}},
                    "spec": {"image": "i"},
                }
            },
            ["spec.template.metadata.bogus", "spec.template.spec.extra", "spec.template.status"],
            id="embedded-resource",
        ),
        pytest.param({"quantity": "100Mi"}, {"quantity": "100Mi"}, [], id="int-or-string"),
    ],
)
def test_prune(spec: dict[str, Any], kept: dict[str, Any], removed: list[str]) -> None:
    obj = {
        "apiVersion": "example.com/v1",
        "kind": "Widget",
        "metadata": {"name": "w", "odd": 1},
        "spec": spec,
    }
    assert CustomResourceSchema(PRUNE_SCHEMA).prune(obj) == removed
    assert obj == {
        "apiVersion": "example.com/v1",
        "kind": "Widget",
        "metadata": {"name": "w", "odd": 1},
        "spec": kept,
    }


def test_prune_unknown_top_level_field_and_missing_schema_keys() -> None:
    obj = {"apiVersion": "v", "kind": "K", "metadata": {}, "spec": {}, "extra": {"a": 1}}
    assert CustomResourceSchema({"type": "object"}).prune(obj) == ["spec", "extra"]
    assert obj == {"apiVersion": "v", "kind": "K", "metadata": {}}


# --- defaulting -------------------------------------------------------------------------------------

DEFAULT_SCHEMA = _obj(
    spec=_obj(
        replicas={"type": "integer", "default": 1},
        mode={"type": "string", "default": "fast"},
        nullableMode={"type": "string", "nullable": True, "default": "x"},
        plain={"type": "string"},
        nested=_obj(inner=_obj(value={"type": "integer", "default": 7})),
        policy={
            "type": "object",
            "default": {},
            "properties": {"kind": {"type": "string", "default": "auto"}},
        },
        ports={
            "type": "array",
            "items": _obj(port={"type": "integer"}, protocol={"type": "string", "default": "TCP"}),
        },
        byName={"type": "object", "additionalProperties": _obj(weight={"type": "integer", "default": 10})},
    ),
)


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        pytest.param(
            {},
            {"replicas": 1, "mode": "fast", "nullableMode": "x", "policy": {"kind": "auto"}},
            id="absent-fields-and-defaults-inside-a-default",
        ),
        pytest.param(
            {"replicas": 3, "mode": "slow", "nullableMode": None, "policy": {"kind": "manual"}},
            {"replicas": 3, "mode": "slow", "nullableMode": None, "policy": {"kind": "manual"}},
            id="given-values-and-nullable-null-kept",
        ),
        pytest.param(
            {"replicas": None, "plain": None},
            {"replicas": 1, "mode": "fast", "nullableMode": "x", "policy": {"kind": "auto"}},
            id="non-nullable-null-defaulted-or-dropped",
        ),
        pytest.param(
            {"nested": {"inner": {}}},
            {
                "replicas": 1,
                "mode": "fast",
                "nullableMode": "x",
                "policy": {"kind": "auto"},
                "nested": {"inner": {"value": 7}},
            },
            id="nested-only-where-parent-exists",
        ),
        pytest.param(
            {
                "ports": [{"port": 80}, {"port": 53, "protocol": "UDP"}],
                "byName": {"a": {}, "b": {"weight": 1}},
            },
            {
                "replicas": 1,
                "mode": "fast",
                "nullableMode": "x",
                "policy": {"kind": "auto"},
                "ports": [{"port": 80, "protocol": "TCP"}, {"port": 53, "protocol": "UDP"}],
                "byName": {"a": {"weight": 10}, "b": {"weight": 1}},
            },
            id="array-items-and-additional-properties",
        ),
    ],
)
def test_default(spec: dict[str, Any], expected: dict[str, Any]) -> None:
    obj = {"spec": spec}
    CustomResourceSchema(DEFAULT_SCHEMA).default(obj)
    assert obj == {"spec": expected}


def test_default_does_not_create_missing_parents_and_copies_values() -> None:
    schema = CustomResourceSchema(DEFAULT_SCHEMA)
    obj: dict[str, Any] = {}
    schema.default(obj)
    assert obj == {}
    first, second = {"spec": {}}, {"spec": {}}
    schema.default(first)
    schema.default(second)
    first["spec"]["policy"]["kind"] = "changed"
    assert second["spec"]["policy"] == {"kind": "auto"}


# --- validation -------------------------------------------------------------------------------------


def _check(schema: dict[str, Any], value: Any) -> list[str]:
    return texts(CustomResourceSchema(_obj(spec=_obj(x=schema))).validate({"spec": {"x": value}}))


@pytest.mark.parametrize(
    ("schema", "value", "expected"),
    [
        pytest.param({"type": "integer"}, 3, [], id="integer-ok"),
        pytest.param({"type": "integer"}, 3.0, [], id="integer-as-float-ok"),
        pytest.param(
            {"type": "integer"},
            "string",
            ['spec.x: Invalid value: "string": spec.x in body must be of type integer: "string"'],
            id="integer-got-string",
        ),
        pytest.param(
            {"type": "integer"},
            True,
            ['spec.x: Invalid value: "boolean": spec.x in body must be of type integer: "boolean"'],
            id="integer-got-boolean",
        ),
        pytest.param({"type": "number"}, 1.5, [], id="number-ok"),
        pytest.param(
            {"type": "string"},
            {"a": 1},
            ['spec.x: Invalid value: "object": spec.x in body must be of type string: "object"'],
            id="string-got-object",
        ),
        pytest.param(
            {"type": "array", "items": {"type": "string"}},
            "a",
            ['spec.x: Invalid value: "string": spec.x in body must be of type array: "string"'],
            id="array-got-string",
        ),
        pytest.param({"type": "boolean"}, False, [], id="boolean-ok"),
        pytest.param(
            {"type": "string"},
            None,
            ['spec.x: Invalid value: "null": spec.x in body must be of type string: "null"'],
            id="null-not-nullable",
        ),
        pytest.param({"type": "string", "nullable": True}, None, [], id="null-nullable"),
        pytest.param({"x-kubernetes-int-or-string": True}, 5, [], id="int-or-string-int"),
        pytest.param({"x-kubernetes-int-or-string": True}, "5%", [], id="int-or-string-string"),
        pytest.param(
            {"x-kubernetes-int-or-string": True},
            1.5,
            ['spec.x: Invalid value: "number": spec.x in body must be of type integer,string: "number"'],
            id="int-or-string-float",
        ),
        pytest.param({"type": "string", "enum": ["a", "b"]}, "a", [], id="enum-ok"),
        pytest.param(
            {"type": "string", "enum": ["a", "b"]},
            "x",
            ['spec.x: Unsupported value: "x": supported values: "a", "b"'],
            id="enum-bad",
        ),
        pytest.param(
            {"type": "integer", "enum": [1, 2]},
            3,
            ['spec.x: Unsupported value: 3: supported values: "1", "2"'],
            id="enum-integers",
        ),
        pytest.param({"type": "integer", "maximum": 10}, 10, [], id="maximum-ok"),
        pytest.param(
            {"type": "integer", "maximum": 10},
            11,
            ["spec.x: Invalid value: 11: spec.x in body should be less than or equal to 10"],
            id="maximum",
        ),
        pytest.param(
            {"type": "integer", "maximum": 10, "exclusiveMaximum": True},
            10,
            ["spec.x: Invalid value: 10: spec.x in body should be less than 10"],
            id="exclusive-maximum",
        ),
        pytest.param(
            {"type": "number", "minimum": 0.5},
            0.25,
            ["spec.x: Invalid value: 0.25: spec.x in body should be greater than or equal to 0.5"],
            id="minimum",
        ),
        pytest.param(
            {"type": "integer", "minimum": 0, "exclusiveMinimum": True},
            0,
            ["spec.x: Invalid value: 0: spec.x in body should be greater than 0"],
            id="exclusive-minimum",
        ),
        pytest.param({"type": "number", "multipleOf": 0.1}, 0.3, [], id="multiple-of-decimal-ok"),
        pytest.param(
            {"type": "integer", "multipleOf": 5},
            7,
            ["spec.x: Invalid value: 7: spec.x in body should be a multiple of 5"],
            id="multiple-of",
        ),
        pytest.param({"type": "string", "maxLength": 3}, "abc", [], id="max-length-ok"),
        pytest.param(
            {"type": "string", "maxLength": 3},
            "abcd",
            ["spec.x: Too long: may not be more than 3 bytes"],
            id="max-length",
        ),
        pytest.param(
            {"type": "string", "minLength": 2},
            "a",
            ['spec.x: Invalid value: "a": spec.x in body should be at least 2 chars long'],
            id="min-length",
        ),
        pytest.param({"type": "string", "pattern": "^[a-z]+$"}, "abc", [], id="pattern-ok"),
        pytest.param(
            {"type": "string", "pattern": "^[a-z]+$"},
            "ABC",
            ["spec.x: Invalid value: \"ABC\": spec.x in body should match '^[a-z]+$'"],
            id="pattern",
        ),
        pytest.param(
            {"type": "string", "format": "date-time"}, "2024-05-01T10:00:00Z", [], id="date-time-ok"
        ),
        pytest.param(
            {"type": "string", "format": "date-time"},
            "yesterday",
            ['spec.x: Invalid value: "yesterday": spec.x in body must be of type date-time: "yesterday"'],
            id="date-time",
        ),
        pytest.param({"type": "integer", "format": "int32"}, 5, [], id="int32-lenient"),
        pytest.param({"type": "integer", "format": "int64"}, 2**40, [], id="int64-lenient"),
        pytest.param({"type": "string", "format": "no-such-format"}, "x", [], id="unknown-format"),
        pytest.param(
            {"type": "array", "items": {"type": "string"}, "maxItems": 2},
            ["a", "b", "c"],
            ["spec.x: Too many: 3: must have at most 2 items"],
            id="max-items",
        ),
        pytest.param(
            {"type": "array", "items": {"type": "string"}, "minItems": 2},
            ["a"],
            ["spec.x: Invalid value: 1: spec.x in body should have at least 2 items"],
            id="min-items",
        ),
        pytest.param(
            {"type": "array", "items": {"type": "integer"}, "uniqueItems": True},
            [1, 2, 1],
            ['spec.x: Invalid value: "": spec.x in body shouldn\'t contain duplicates'],
            id="unique-items",
        ),
        pytest.param(
            {"type": "object", "additionalProperties": {"type": "string"}, "maxProperties": 1},
            {"a": "1", "b": "2"},
            ["spec.x: Too many: 2: must have at most 1 items"],
            id="max-properties",
        ),
        pytest.param(
            {"type": "object", "additionalProperties": {"type": "string"}, "minProperties": 2},
            {"a": "1"},
            ["spec.x: Invalid value: 2: spec.x in body should have at least 2 properties"],
            id="min-properties",
        ),
        pytest.param(
            {"type": "object", "additionalProperties": {"type": "integer"}},
            {"a": 1, "b": "2"},
            ['spec.x.b: Invalid value: "string": spec.x.b in body must be of type integer: "string"'],
            id="additional-properties-values",
        ),
        pytest.param(
            {
                "type": "object",
                "required": ["a", "b"],
                "properties": {"a": {"type": "string"}, "b": {"type": "string"}},
            },
            {"a": "1"},
            ["spec.x.b: Required value"],
            id="required",
        ),
        pytest.param(
            {"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "string"}},
            ["a", "b", "a", "a"],
            ['spec.x[2]: Duplicate value: "a"'],
            id="list-type-set",
        ),
        pytest.param(
            {
                "type": "array",
                "x-kubernetes-list-type": "map",
                "x-kubernetes-list-map-keys": ["name", "proto"],
                "items": _obj(name={"type": "string"}, proto={"type": "string"}, port={"type": "integer"}),
            },
            [
                {"name": "a", "proto": "TCP", "port": 1},
                {"name": "a", "proto": "UDP"},
                {"name": "a", "proto": "TCP"},
            ],
            ['spec.x[2]: Duplicate value: {"name":"a","proto":"TCP"}'],
            id="list-type-map",
        ),
        pytest.param(
            {"type": "array", "items": _obj(n={"type": "integer", "maximum": 1})},
            [{"n": 1}, {"n": 2}],
            ["spec.x[1].n: Invalid value: 2: spec.x[1].n in body should be less than or equal to 1"],
            id="array-item-path",
        ),
        pytest.param(
            {
                "type": "object",
                "properties": {"a": {"type": "string"}, "b": {"type": "string"}},
                "oneOf": [{"required": ["a"]}, {"required": ["b"]}],
            },
            {"a": "1", "b": "2"},
            [
                'spec.x: Invalid value: "": "spec.x" must validate one and only one schema (oneOf). '
                "Found 2 valid alternatives"
            ],
            id="one-of-both",
        ),
        pytest.param(
            {
                "type": "object",
                "properties": {"a": {"type": "string"}},
                "anyOf": [{"required": ["a"]}, {"required": ["b"]}],
            },
            {},
            ['spec.x: Invalid value: "": "spec.x" must validate at least one schema (anyOf)'],
            id="any-of-none",
        ),
        pytest.param(
            {
                "type": "object",
                "properties": {"a": {"type": "string"}},
                "anyOf": [{"required": ["a"]}, {"required": ["b"]}],
            },
            {"b": 1},
            [],
            id="any-of-one",
        ),
        pytest.param(
            {"type": "integer", "allOf": [{"minimum": 1}, {"maximum": 5}]},
            9,
            [
                "spec.x: Invalid value: 9: spec.x in body should be less than or equal to 5",
                'spec.x: Invalid value: "": spec.x must validate all the schemas (allOf)',
            ],
            id="all-of",
        ),
        pytest.param(
            {"type": "string", "not": {"enum": ["forbidden"]}},
            "forbidden",
            ['spec.x: Invalid value: "": "spec.x" must not validate the schema (not)'],
            id="not",
        ),
        pytest.param(
            {
                "type": "object",
                "x-kubernetes-embedded-resource": True,
                "x-kubernetes-preserve-unknown-fields": True,
            },
            {"metadata": {}},
            [
                "spec.x.apiVersion: Required value: must not be empty",
                "spec.x.kind: Required value: must not be empty",
            ],
            id="embedded-needs-type-meta",
        ),
        pytest.param(
            {"type": "string", "x-kubernetes-validations": [{"rule": "self == 'never'"}]},
            "anything",
            [],
            id="cel-rules-skipped",
        ),
    ],
)
def test_validate(schema: dict[str, Any], value: Any, expected: list[str]) -> None:
    assert _check(schema, value) == expected


def test_validate_reasons() -> None:
    causes = CustomResourceSchema(
        _obj(
            spec=_obj(
                a={"type": "integer"},
                b={"type": "string", "enum": ["x"]},
                c={"type": "integer", "maximum": 1},
            )
        )
    ).validate({"spec": {"a": "s", "b": "y", "c": 2}})
    assert [(c.field, c.reason) for c in causes] == [
        ("spec.a", "FieldValueTypeInvalid"),
        ("spec.b", "FieldValueNotSupported"),
        ("spec.c", "FieldValueInvalid"),
    ]


def test_validate_messages_in_invalid_status() -> None:
    schema = CustomResourceSchema(_obj(spec={**_obj(size={"type": "string"}), "required": ["size"]}))
    causes = schema.validate({"spec": {}})
    err = Invalid.for_fields("Widget", "example.com", "w1", causes)
    assert err.message == 'Widget.example.com "w1" is invalid: spec.size: Required value'
    assert err.status()["details"]["causes"] == [
        {"reason": "FieldValueRequired", "message": "Required value", "field": "spec.size"}
    ]


# --- the real NodeResourceTopology v1alpha2 CRD -----------------------------------------------------

NRT_CRD_YAML = r"""
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: noderesourcetopologies.topology.node.k8s.io
  annotations:
    api-approved.kubernetes.io: https://github.com/kubernetes/enhancements/pull/1870
spec:
  group: topology.node.k8s.io
  names:
    kind: NodeResourceTopology
    listKind: NodeResourceTopologyList
    plural: noderesourcetopologies
    shortNames: [node-res-topo]
    singular: noderesourcetopology
  scope: Cluster
  versions:
  - name: v1alpha2
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        description: NodeResourceTopology describes node resources and their topology.
        type: object
        required: [zones]
        properties:
          apiVersion: {type: string}
          kind: {type: string}
          metadata: {type: object}
          topologyPolicies:
            description: DEPRECATED
            type: array
            items: {type: string}
          attributes:
            type: array
            items: &attribute
              type: object
              required: [name, value]
              properties:
                name: {type: string}
                value: {type: string}
          zones:
            type: array
            items:
              type: object
              required: [name, type]
              properties:
                name: {type: string}
                type: {type: string}
                parent: {type: string}
                costs:
                  type: array
                  items:
                    type: object
                    required: [name, value]
                    properties:
                      name: {type: string}
                      value: {type: integer, format: int64}
                attributes:
                  type: array
                  items: *attribute
                resources:
                  type: array
                  items:
                    type: object
                    required: [allocatable, available, capacity, name]
                    properties:
                      name: {type: string}
                      capacity: &quantity
                        anyOf: [{type: integer}, {type: string}]
                        pattern: ^(\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|([eE](\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?$
                        x-kubernetes-int-or-string: true
                      allocatable: *quantity
                      available: *quantity
"""

NRT_OBJECT_YAML = """
apiVersion: topology.node.k8s.io/v1alpha2
kind: NodeResourceTopology
metadata:
  name: worker-0
zones:
- name: node-0
  type: Node
  costs: [{name: node-0, value: 10}, {name: node-1, value: 20}]
  resources:
  - {name: cpu, capacity: "16", allocatable: "15", available: "13"}
  - {name: memory, capacity: 64Gi, allocatable: 62Gi, available: 60Gi}
  - {name: example.com/dev, capacity: 4, allocatable: 4, available: 3}
- name: node-1
  type: Node
  costs: [{name: node-0, value: 20}, {name: node-1, value: 10}]
  resources:
  - {name: cpu, capacity: "16", allocatable: "16", available: "16"}
attributes:
- {name: topologyManagerPolicy, value: single-numa-node}
- {name: topologyManagerScope, value: container}
topologyPolicies: [SingleNUMANodeContainerLevel]
"""


@pytest.fixture
def nrt_crd() -> dict[str, Any]:
    return yaml.safe_load(NRT_CRD_YAML)


@pytest.fixture
def nrt_schema(nrt_crd: dict[str, Any]) -> CustomResourceSchema:
    return crdschema.custom_resource_schema(nrt_crd, "v1alpha2")


def test_nrt_crd_is_valid(nrt_crd: dict[str, Any]) -> None:
    assert crdschema.validate_crd(nrt_crd) == []
    assert crdschema.printer_columns(nrt_crd, "v1alpha2")[0]["name"] == "Age"
    assert crdschema.accepted_names(nrt_crd)["shortNames"] == ["node-res-topo"]


def test_nrt_object_round_trip(nrt_schema: CustomResourceSchema) -> None:
    obj = yaml.safe_load(NRT_OBJECT_YAML)
    expected = copy.deepcopy(obj)
    assert nrt_schema.prune(obj) == []
    nrt_schema.default(obj)
    assert nrt_schema.validate(obj) == []
    assert obj == expected


def _nrt(mutate: Any) -> dict[str, Any]:
    obj = yaml.safe_load(NRT_OBJECT_YAML)
    mutate(obj)
    return obj


QUANTITY_PATTERN = r"^(\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|([eE](\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?$"


@pytest.mark.parametrize(
    ("obj", "expected"),
    [
        pytest.param(_nrt(lambda o: o.pop("zones")), ["zones: Required value"], id="zones-required"),
        pytest.param(
            _nrt(lambda o: o["zones"][1].pop("name")),
            ["zones[1].name: Required value"],
            id="zone-name-required",
        ),
        pytest.param(
            _nrt(lambda o: o["zones"][0]["resources"][0].update(available="lots")),
            [
                f'zones[0].resources[0].available: Invalid value: "lots": '
                f"zones[0].resources[0].available in body should match '{QUANTITY_PATTERN}'"
            ],
            id="bad-quantity",
        ),
        pytest.param(
            _nrt(lambda o: o["zones"][0]["resources"][2].update(capacity=True)),
            [
                'zones[0].resources[2].capacity: Invalid value: "boolean": zones[0].resources[2].capacity in body '
                'must be of type integer,string: "boolean"'
            ],
            id="quantity-of-wrong-type",
        ),
        pytest.param(
            _nrt(lambda o: o["zones"][0]["costs"][1].update(value="20")),
            [
                'zones[0].costs[1].value: Invalid value: "string": zones[0].costs[1].value in body '
                'must be of type integer: "string"'
            ],
            id="cost-not-integer",
        ),
        pytest.param(
            _nrt(lambda o: o["attributes"].append({"name": "x"})),
            ["attributes[2].value: Required value"],
            id="attribute-value-required",
        ),
    ],
)
def test_nrt_validation(nrt_schema: CustomResourceSchema, obj: dict[str, Any], expected: list[str]) -> None:
    assert texts(nrt_schema.validate(obj)) == expected


def test_nrt_prune_reports_unknown_fields(nrt_schema: CustomResourceSchema) -> None:
    obj = _nrt(lambda o: (o["zones"][1].update(numaId=1), o.update(status={"ready": True})))
    assert nrt_schema.prune(obj) == ["zones[1].numaId", "status"]
    assert "numaId" not in obj["zones"][1]
    assert "status" not in obj
