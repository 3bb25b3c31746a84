{{/* Names, labels and the cached-resource table shared by the templates. */}}

{{- define "kcp.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "kcp.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- $name := default .Chart.Name .Values.nameOverride -}}
{{- if contains $name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{- define "kcp.selectorLabels" -}}
app.kubernetes.io/name: {{ include "kcp.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "kcp.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{ include "kcp.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/component: gateway
{{- end -}}

{{- define "kcp.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{- default (include "kcp.fullname" .) .Values.serviceAccount.name -}}
{{- else -}}
{{- default "default" .Values.serviceAccount.name -}}
{{- end -}}
{{- end -}}

{{/*
kcp.rbacRules: one rule per API group, listing the cached resources of that group with
get/list/watch. "pods" is core (""), "deployments.apps" is group "apps": everything after
the first dot is the group, as kubectl spells resources.
*/}}
{{- define "kcp.rbacRules" -}}
{{- $groups := dict -}}
{{- range .Values.cache.resources -}}
{{- $parts := splitn "." 2 . -}}
{{- $resource := $parts._0 -}}
{{- $group := default "" $parts._1 -}}
{{- $existing := get $groups $group | default list -}}
{{- $_ := set $groups $group (append $existing $resource | uniq) -}}
{{- end -}}
{{- range $group := keys $groups | sortAlpha }}
- apiGroups: [{{ $group | quote }}]
  resources: [{{ range $i, $r := get $groups $group | sortAlpha }}{{ if $i }}, {{ end }}{{ $r | quote }}{{ end }}]
  verbs: ["get", "list", "watch"]
{{- end -}}
{{- end -}}
