{{/* The chart's name: the app.kubernetes.io/name label. */}}
{{- define "karpenter.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/*
The name of the release's objects: fullnameOverride, else the release name, with the chart's
name appended unless the release name already contains it. At most 63 characters (DNS labels).
*/}}
{{- define "karpenter.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{/* The labels that select the controller's pods; they never change across upgrades. */}}
{{- define "karpenter.selectorLabels" -}}
app.kubernetes.io/name: {{ include "karpenter.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{/* The labels of every object. */}}
{{- define "karpenter.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{ include "karpenter.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- with .Values.additionalLabels }}
{{ toYaml . }}
{{- end }}
{{- end }}

{{/* The ServiceAccount the controller runs as. */}}
{{- define "karpenter.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "karpenter.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- required "serviceAccount.name is required when serviceAccount.create is false" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{/* The controller's image: repository@digest when a digest is set, else repository:tag. */}}
{{- define "karpenter.image" -}}
{{- $image := .Values.controller.image }}
{{- if $image.digest }}
{{- printf "%s@%s" $image.repository $image.digest }}
{{- else }}
{{- printf "%s:%s" $image.repository (default .Chart.AppVersion $image.tag) }}
{{- end }}
{{- end }}

{{/*
FEATURE_GATES: settings.featureGates as "Name=true,Other=false", names capitalized
(spotToSpotConsolidation → SpotToSpotConsolidation), sorted.
*/}}
{{- define "karpenter.featureGates" -}}
{{- $gates := list }}
{{- range $name, $enabled := .Values.settings.featureGates }}
{{- $gates = append $gates (printf "%s%s=%t" (substr 0 1 $name | upper) (substr 1 -1 $name) $enabled) }}
{{- end }}
{{- join "," $gates }}
{{- end }}

{{/*
A list of pod (anti-)affinity terms or topology spread constraints with the chart's pods as the
labelSelector of those that have none.
*/}}
{{- define "karpenter.withSelector" -}}
{{- $terms := list }}
{{- range .terms }}
{{- $term := deepCopy . }}
{{- if not (hasKey $term "labelSelector") }}
{{- $_ := set $term "labelSelector" (dict "matchLabels" (include "karpenter.selectorLabels" $.root | fromYaml)) }}
{{- end }}
{{- $terms = append $terms $term }}
{{- end }}
{{- toYaml $terms }}
{{- end }}

{{/*
The pods' affinity: .Values.affinity with the chart's pods as the labelSelector of every pod
(anti-)affinity term that has none.
*/}}
{{- define "karpenter.affinity" -}}
{{- $affinity := deepCopy .Values.affinity }}
{{- range $kind := list "podAffinity" "podAntiAffinity" }}
{{- with index $affinity $kind }}
{{- $spec := . }}
{{- with $spec.requiredDuringSchedulingIgnoredDuringExecution }}
{{- $_ := set $spec "requiredDuringSchedulingIgnoredDuringExecution" (include "karpenter.withSelector" (dict "root" $ "terms" .) | fromYamlArray) }}
{{- end }}
{{- with $spec.preferredDuringSchedulingIgnoredDuringExecution }}
{{- $weighted := list }}
{{- range . }}
{{- $w := deepCopy . }}
{{- $_ := set $w "podAffinityTerm" (include "karpenter.withSelector" (dict "root" $ "terms" (list $w.podAffinityTerm)) | fromYamlArray | first) }}
{{- $weighted = append $weighted $w }}
{{- end }}
{{- $_ := set $spec "preferredDuringSchedulingIgnoredDuringExecution" $weighted }}
{{- end }}
{{- end }}
{{- end }}
{{- toYaml $affinity }}
{{- end }}
