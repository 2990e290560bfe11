# Visibility queries over the VmTemplates kube-mgmt replicates into data.kubernetes.vmtemplates.
#
#   POST /v1/data/greenops/visibility/placed_in_eu
#   POST /v1/data/greenops/visibility/affected  {"input": {"region": "westeurope"}}
package greenops.visibility

import rego.v1

import data.greenops.catalog

placed := [summary |
	some ns, name
	obj := data.kubernetes.vmtemplates[ns][name]
	is_string(obj.spec.provider)
	is_string(obj.spec.schedulingLocation)
	summary := {
		"namespace": ns,
		"name": name,
		"tenant": object.get(obj.spec, "tenant", "default"),
		"provider": obj.spec.provider,
		"region": obj.spec.schedulingLocation,
		"schedulingTime": object.get(obj.spec, "schedulingTime", null),
		"eu": object.get(object.get(catalog.regions, obj.spec.provider, {}), [obj.spec.schedulingLocation, "eu"], false),
	}
]

# Which workloads are placed in the EU.
placed_in_eu := [w | some w in placed; w.eu]

# Which workloads would be affected if input.region became ineligible: those placed there.
affected := [w | some w in placed; w.region == input.region]
