{{/* The chart name. */}}
{{- define "krmsync.name" -}}
{{- .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* The name of the controller's objects: krmsync-controller by default. */}}
{{- define "krmsync.fullname" -}}
{{- printf "%s-controller" (include "krmsync.name" .) | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* Labels of every object. */}}
{{- define "krmsync.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{ include "krmsync.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end -}}

{{/* Labels selecting the controller's pods. */}}
{{- define "krmsync.selectorLabels" -}}
app.kubernetes.io/name: {{ include "krmsync.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: controller
{{- end -}}

{{/* The controller's ServiceAccount. */}}
{{- define "krmsync.serviceAccountName" -}}
{{- default (include "krmsync.fullname" .) .Values.serviceAccount.name -}}
{{- end -}}
