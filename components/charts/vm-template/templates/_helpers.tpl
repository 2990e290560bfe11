{{/* "true" while the run is on: the decision exists, its start time (less the lead) has come and
     schedulingTime + duration has not. After the run nothing renders, so the next helm upgrade
     deletes the VM's objects: that is how the cluster path retires it. */}}
{{- define "vmtemplate.due" -}}
{{- $seconds := include "vmtemplate.durationSeconds" . | float64 -}}
{{- if and .Values.provider .Values.schedulingLocation .Values.schedulingTime .Values.vmSize -}}
{{- $now := now -}}
{{- $start := toDate "2006-01-02T15:04:05Z07:00" .Values.schedulingTime -}}
{{- $gate := dateModify (printf "-%ds" (int (.Values.provisioningLeadSeconds | default 0))) $start -}}
{{- /* Elapsed seconds against the duration, not dateModify: that silently returns the start
       unchanged when a duration overflows Go's time.Duration (~292 years), so the VM would never render. */ -}}
{{- if and (not ($now.Before $gate)) (lt ($now.Sub $start).Seconds $seconds) -}}true{{- end -}}
{{- end -}}
{{- end -}}

{{/* The workload's duration in seconds, in the workload contract's form (greenops/models/contract.py,
     which values.schema.json enforces before this runs): whole hours as a number, a numeric string of
     hours ("1.5" is 90 minutes), otherwise "<n>h" then "<n>m" ("6h", "90m", "1h30m"), lowercase,
     without spaces. Not Go's time.ParseDuration: it also takes "s", "ms", signs and a bare "0", which
     the contract refuses, and it cannot read a bare number. A bad duration fails the whole render. */}}
{{- define "vmtemplate.durationSeconds" -}}
{{- $raw := .Values.duration -}}
{{- $seconds := 0.0 -}}
{{- if kindIs "string" $raw -}}
{{- $text := $raw -}}
{{- if regexMatch `^[0-9]+(\.[0-9]+)?$` $text -}}
{{- $seconds = mulf $text 3600 -}}
{{- else if regexMatch `^([0-9]+(\.[0-9]+)?h)?([0-9]+(\.[0-9]+)?m)?$` $text -}}
{{- range regexFindAll `[0-9.]+[hm]` $text -1 -}}
{{- $seconds = addf $seconds (mulf (trimSuffix "h" (trimSuffix "m" .)) (ternary 3600 60 (hasSuffix "h" .))) -}}
{{- end -}}
{{- else -}}
{{- fail (printf "VmTemplate %s: duration %q is not a duration: whole hours as a number (6), or a string of hours and/or minutes in that order, lowercase, without spaces: \"6\", \"1.5\", \"6h\", \"90m\", \"1h30m\"" .Values.vmName $raw) -}}
{{- end -}}
{{- else if or (kindIs "float64" $raw) (kindIs "int64" $raw) (kindIs "int" $raw) -}}
{{- $seconds = mulf $raw 3600 -}}
{{- else -}}
{{- fail (printf "VmTemplate %s: duration must be a number of hours or a string such as '6h', not %v" .Values.vmName $raw) -}}
{{- end -}}
{{- if le $seconds 0.0 -}}
{{- fail (printf "VmTemplate %s: duration must be positive, got %v" .Values.vmName $raw) -}}
{{- end -}}
{{- $seconds -}}
{{- end -}}

{{/* The chart's catalog (files/catalog.json), generated from the project's data/. */}}
{{- define "vmtemplate.region" -}}
{{- $catalog := .Files.Get "files/catalog.json" | fromJson -}}
{{- $region := index (index $catalog.regions .Values.provider) .Values.schedulingLocation | default dict -}}
{{- if not $region -}}{{- fail (printf "VmTemplate %s: no catalog entry for %s region %s" .Values.vmName .Values.provider .Values.schedulingLocation) -}}{{- end -}}
{{- toJson $region -}}
{{- end -}}

{{/* The image .Values.image names (none: the catalog's default), as the provider takes it; on AWS an
     imageID for a named choice ("resolve:ssm:<parameter>"), none for the default (its AMI is the region's). */}}
{{- define "vmtemplate.image" -}}
{{- $catalog := .Files.Get "files/catalog.json" | fromJson -}}
{{- $name := .Values.image | default $catalog.defaultImage -}}
{{- $image := index $catalog.images $name | default dict -}}
{{- if not $image -}}{{- fail (printf "VmTemplate %s: unknown image %q" .Values.vmName $name) -}}{{- end -}}
{{- toJson (index $image .Values.provider) -}}
{{- end -}}

{{/* The namespace of every object: the release's, which Krateo makes the VmTemplate's own, so a
     tenant's objects never land in a namespace it does not own. A namespace value is refused unless it
     is that one (admission refuses it first, with the same reason). */}}
{{- define "vmtemplate.namespace" -}}
{{- if and .Values.namespace (ne .Values.namespace .Release.Namespace) -}}
{{- fail (printf "VmTemplate %s/%s: namespace %q is not the VmTemplate's own namespace %q: its objects are always created in its own namespace (remove namespace)" .Release.Namespace .Release.Name .Values.namespace .Release.Namespace) -}}
{{- end -}}
{{- .Release.Namespace -}}
{{- end -}}

{{/* What every object's name starts with: vmName and 8 hex digits of sha256("<namespace>/<release>").
     The namespace and the release (Krateo's: the VmTemplate's name) tell VmTemplates apart, so two
     tenants with the same vmName share no object and, on Azure (one resource group) and GCP (one
     project), no cloud resource either; both are fixed for the VmTemplate's life, so its names are.
     vmName (at most 40) + 9 + the longest suffix ("-network", 8) stays within GCP's 63. An object set
     made before the hash (its network named <vmName>-<suffix> and owned by this release, in this
     namespace) keeps its names, so the upgrade does not replace a running VM.
     Takes: root, and the set's network object: api, kind, suffix. */}}
{{- define "vmtemplate.stem" -}}
{{- $v := .root.Values -}}
{{- $old := lookup .api .kind .root.Release.Namespace (printf "%s-%s" $v.vmName .suffix) | default dict -}}
{{- if eq (dig "metadata" "annotations" "meta.helm.sh/release-name" "" $old) .root.Release.Name -}}
{{- $v.vmName -}}
{{- else -}}
{{- printf "%s-%s" $v.vmName (printf "%s/%s" .root.Release.Namespace .root.Release.Name | sha256sum | trunc 8) -}}
{{- end -}}
{{- end -}}

{{/* Every value below is quoted (or toJson): a value can never end its line, so it cannot add a
     field, an object or a document, whatever the schema let through. */}}
{{- define "vmtemplate.metadata" -}}
name: {{ .name | quote }}
namespace: {{ include "vmtemplate.namespace" .root | quote }}
labels:
  {{- if eq .root.Values.provider "gcp" }}
  greenops-workload: {{ .root.Values.vmName | lower | quote }}
  greenops-tenant: {{ .root.Values.tenant | lower | quote }}
  greenops-provider: "gcp"
  greenops-managed-by: "greenops"
  {{- else }}
  greenops.io/workload: {{ .root.Values.vmName | quote }}
  greenops.io/tenant: {{ .root.Values.tenant | quote }}
  greenops.io/provider: {{ .root.Values.provider | quote }}
  greenops.io/managed-by: "greenops"
  {{- end }}
{{- $notes := dict -}}
{{- if and (eq .root.Values.provider "gcp") .root.Values.gcpProject -}}{{- $_ := set $notes "cnrm.cloud.google.com/project-id" .root.Values.gcpProject -}}{{- end -}}
{{- if eq .root.Values.provider "aws" -}}{{- $_ := set $notes "services.k8s.aws/region" .root.Values.schedulingLocation -}}{{- end -}}
{{- if .root.Values.skipAwait -}}{{- $_ := set $notes "pulumi.com/skipAwait" "true" -}}{{- end -}}
{{- range $k, $v := (.notes | default dict) -}}{{- $_ := set $notes $k $v -}}{{- end -}}
{{- if $notes }}
annotations:
  {{- range $k, $v := $notes }}
  {{ $k | quote }}: {{ $v | quote }}
  {{- end }}
{{- end }}
{{- end -}}

{{- define "vmtemplate.tags" -}}
greenops-workload: {{ .Values.vmName | quote }}
greenops-tenant: {{ .Values.tenant | quote }}
managed-by: "greenops"
{{- end -}}

{{- define "vmtemplate.awsTags" -}}
- key: Name
  value: {{ .name | quote }}
- key: greenops-workload
  value: {{ .root.Values.vmName | quote }}
- key: greenops-tenant
  value: {{ .root.Values.tenant | quote }}
- key: managed-by
  value: "greenops"
{{- end -}}

{{/*
The cloud-config of the workload's run (.Values.run.script), byte for byte what
greenops/renderers/user_data.py writes on the Pulumi path: the script base64 in write_files, run
once from runcmd, then the VM powers itself off.
*/}}
{{- define "vmtemplate.userData" -}}
{{- /* The run's report script, when the controller has written it at the gate: a Secret (it carries
       the reservation's completion token), read here and never a value (greenops/renderers/user_data.py). */ -}}
{{- $secret := lookup "v1" "Secret" .Release.Namespace (printf "%s-greenops-run" .Release.Name) | default dict -}}
{{- $report := dig "data" "report.sh" "" $secret -}}
{{- /* The run's env: each value from the Secret greenops-run-secrets by key, base64 as its data holds it. */ -}}
{{- $env := "" -}}
{{- if .Values.run.env -}}
{{- $values := dig "data" dict (lookup "v1" "Secret" .Release.Namespace "greenops-run-secrets" | default dict) -}}
{{- range $i, $e := .Values.run.env -}}
{{- if not (hasKey $values $e.secret) -}}{{- fail (printf "VmTemplate %s: run.env[%d].secret %q (%s): no such key in the Secret greenops-run-secrets of its namespace" $.Values.vmName $i $e.secret $e.name) -}}{{- end -}}
{{- $env = printf "%sexport %s=\"$(printf %%s '%s' | base64 -d)\"\n" $env $e.name (index $values $e.secret) -}}
{{- end -}}
{{- end -}}
#cloud-config
write_files:
  - path: /var/lib/greenops/run.sh
    permissions: "0700"
    encoding: b64
    content: {{ .Values.run.script | b64enc }}
{{- if $env }}
  - path: /var/lib/greenops/run.env
    permissions: "0600"
    encoding: b64
    content: {{ $env | b64enc }}
{{- end }}
{{- if $report }}
  - path: /var/lib/greenops/report.sh
    permissions: "0700"
    encoding: b64
    content: {{ $report }}
{{- end }}
runcmd:
  - [sh, -c, "{{ if $env }}. /var/lib/greenops/run.env; {{ end }}/var/lib/greenops/run.sh > /var/log/greenops-run.log 2>&1; echo $? > /var/lib/greenops/exit-status{{ if $report }}; /var/lib/greenops/report.sh{{ end }}"]
power_state:
  mode: poweroff
  message: "greenops: the run has ended"
  condition: true
{{ end -}}
