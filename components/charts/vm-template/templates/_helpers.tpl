{{/* "true" once the decision exists and its start time (less the lead) has come. */}}
{{- define "vmtemplate.due" -}}
{{- if and .Values.provider .Values.schedulingLocation .Values.schedulingTime .Values.vmSize -}}
{{- $start := toDate "2006-01-02T15:04:05Z07:00" .Values.schedulingTime -}}
{{- $gate := dateModify (printf "-%ds" (int (.Values.provisioningLeadSeconds | default 0))) $start -}}
{{- if not (now.Before $gate) -}}true{{- end -}}
{{- end -}}
{{- end -}}

{{/* The chart's catalog (files/catalog.json), generated from the project's data/. */}}
{{- define "vmtemplate.region" -}}
{{- $catalog := .Files.Get "files/catalog.json" | fromJson -}}
{{- $region := index (index $catalog.regions .Values.provider) .Values.schedulingLocation | default dict -}}
{{- if not $region -}}{{- fail (printf "VmTemplate %s: no catalog entry for %s region %s" .Values.vmName .Values.provider .Values.schedulingLocation) -}}{{- end -}}
{{- toJson $region -}}
{{- end -}}

{{- define "vmtemplate.image" -}}
{{- $catalog := .Files.Get "files/catalog.json" | fromJson -}}
{{- toJson (index $catalog.images .Values.provider) -}}
{{- end -}}

{{- define "vmtemplate.metadata" -}}
name: {{ .name }}
namespace: {{ .root.Values.namespace }}
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
{{- if $notes }}
annotations:
  {{- range $k, $v := $notes }}
  {{ $k }}: {{ $v | quote }}
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
