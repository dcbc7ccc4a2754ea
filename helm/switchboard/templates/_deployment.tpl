{{/*
One service's Deployment. Arguments: root (the chart context), component
(mcp or runs), binary (the image and executable name), svc (its values),
dbName, healthService (the gRPC service readiness follows), env (its own
settings, a YAML list), volumes and volumeMounts (YAML lists).
*/}}
{{- define "switchboard.deployment" -}}
{{- $root := .root -}}
{{- $v := $root.Values -}}
{{- $svc := .svc -}}
{{- $name := include "switchboard.componentName" (dict "root" $root "component" .component) -}}
{{- $sqlite := eq $v.database.kind "sqlite" -}}
{{- $tlsSecret := include "switchboard.tlsSecret" (dict "root" $root "component" .component) -}}
apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ $name }}
  labels:
    {{- include "switchboard.labels" $root | nindent 4 }}
    app.kubernetes.io/component: {{ .component }}
spec:
  {{- if not $svc.autoscaling.enabled }}
  replicas: {{ $svc.replicas }}
  {{- end }}
  revisionHistoryLimit: 5
  strategy:
    {{- if $sqlite }}
    # One SQLite file has one writer: the old pod stops before the new starts.
    type: Recreate
    {{- else }}
    type: RollingUpdate
    rollingUpdate:
      maxUnavailable: 0
      maxSurge: 1
    {{- end }}
  selector:
    matchLabels:
      {{- include "switchboard.selectorLabels" . | nindent 6 }}
  template:
    metadata:
      labels:
        {{- include "switchboard.labels" $root | nindent 8 }}
        app.kubernetes.io/component: {{ .component }}
      annotations:
        # The values the chart's own Secret is made from (generated keys are
        # left out: they are made once and then read back, never changed).
        checksum/inline-secret: {{ list $v.auth.hs256.value $v.sealingKeys.value $v.database | toJson | sha256sum }}
        checksum/config: {{ include (print $root.Template.BasePath "/configmap.yaml") $root | sha256sum }}
        checksum/org-limits: {{ $v.orgLimits.overrides | sha256sum }}
        {{- if eq .component "runs" }}
        checksum/budgets: {{ $v.runsService.budgets.overrides | sha256sum }}
        {{- end }}
        {{- with $svc.podAnnotations }}
        {{- toYaml . | nindent 8 }}
        {{- end }}
    spec:
      serviceAccountName: {{ include "switchboard.serviceAccountName" $root }}
      automountServiceAccountToken: false
      enableServiceLinks: false
      # Longer than the shutdown delay and the drain together: the kubelet
      # must never kill a replica that is still finishing calls.
      terminationGracePeriodSeconds: {{ add $v.shutdown.delaySeconds $v.shutdown.drainSeconds $v.shutdown.marginSeconds }}
      securityContext:
        runAsNonRoot: true
        runAsUser: 65532
        runAsGroup: 65532
        fsGroup: 65532
        seccompProfile:
          type: RuntimeDefault
      {{- with $v.imagePullSecrets }}
      imagePullSecrets:
        {{- toYaml . | nindent 8 }}
      {{- end }}
      initContainers:
        # The migration step: applies pending migrations, then exits. On
        # PostgreSQL the migrator holds an advisory lock, so replicas starting
        # together apply each migration once.
        - name: migrate
          image: {{ include "switchboard.image" . }}
          imagePullPolicy: {{ $v.image.pullPolicy }}
          env:
            - name: SWITCHBOARD_MIGRATE_ONLY
              value: "true"
            - name: SWITCHBOARD_LOG_FORMAT
              value: json
            - name: RUST_LOG
              value: {{ $v.telemetry.logFilter | quote }}
            {{- include "switchboard.storageEnv" . | nindent 12 }}
          resources:
            requests: {cpu: 50m, memory: 64Mi, ephemeral-storage: 16Mi}
            limits: {memory: 256Mi, ephemeral-storage: 256Mi}
          securityContext:
            {{- include "switchboard.containerSecurityContext" . | nindent 12 }}
          volumeMounts:
            - name: tmp
              mountPath: /tmp
            {{- if $sqlite }}
            - name: data
              mountPath: /var/lib/switchboard
            {{- end }}
      containers:
        - name: {{ .binary }}
          image: {{ include "switchboard.image" . }}
          imagePullPolicy: {{ $v.image.pullPolicy }}
          ports:
            - name: grpc
              containerPort: {{ $svc.port }}
              protocol: TCP
            {{- if and (eq .component "mcp") $svc.mcpEndpoint.enabled }}
            - name: mcp
              containerPort: {{ $svc.mcpEndpoint.port }}
              protocol: TCP
            {{- end }}
            {{- if $v.telemetry.metrics.enabled }}
            - name: metrics
              containerPort: {{ $v.telemetry.metrics.port }}
              protocol: TCP
            {{- end }}
          env:
            {{- include "switchboard.commonEnv" . | nindent 12 }}
            {{- with .env }}
            {{- . | nindent 12 }}
            {{- end }}
            {{- include "switchboard.tlsEnv" (dict "root" $root "component" .component) | nindent 12 }}
            {{- with $svc.extraEnv }}
            {{- toYaml . | nindent 12 }}
            {{- end }}
          {{- if $tlsSecret }}
          # The kubelet's gRPC probe speaks plaintext only: over TLS the
          # probes check that the listener accepts connections.
          startupProbe:
            tcpSocket:
              port: {{ $svc.port }}
            periodSeconds: 2
            failureThreshold: 30
          livenessProbe:
            tcpSocket:
              port: {{ $svc.port }}
            periodSeconds: 10
            timeoutSeconds: 2
            failureThreshold: 3
          readinessProbe:
            tcpSocket:
              port: {{ $svc.port }}
            periodSeconds: 5
            timeoutSeconds: 2
            failureThreshold: 2
          {{- else }}
          # Liveness follows the process alone; readiness follows the
          # database and turns NOT_SERVING when a drain starts.
          startupProbe:
            grpc:
              port: {{ $svc.port }}
              service: liveness
            periodSeconds: 2
            failureThreshold: 30
          livenessProbe:
            grpc:
              port: {{ $svc.port }}
              service: liveness
            periodSeconds: 10
            timeoutSeconds: 2
            failureThreshold: 3
          readinessProbe:
            grpc:
              port: {{ $svc.port }}
              service: {{ .healthService }}
            periodSeconds: 5
            timeoutSeconds: 2
            failureThreshold: 2
          {{- end }}
          resources:
            {{- toYaml $svc.resources | nindent 12 }}
          securityContext:
            {{- include "switchboard.containerSecurityContext" . | nindent 12 }}
          volumeMounts:
            - name: tmp
              mountPath: /tmp
            {{- if $sqlite }}
            - name: data
              mountPath: /var/lib/switchboard
            {{- end }}
            {{- if eq $v.auth.mode "rs256" }}
            - name: jwt-public-key
              mountPath: /etc/switchboard/jwt
              readOnly: true
            {{- end }}
            {{- if $v.orgLimits.overrides }}
            - name: org-limits
              mountPath: /etc/switchboard/org-limits
              readOnly: true
            {{- end }}
            {{- if $tlsSecret }}
            # A whole Secret (no subPath), so that a renewed certificate
            # reaches the pod and is read again without a restart.
            - name: tls
              mountPath: /etc/switchboard/tls
              readOnly: true
            {{- end }}
            {{- with .volumeMounts }}
            {{- . | nindent 12 }}
            {{- end }}
      volumes:
        - name: tmp
          emptyDir:
            sizeLimit: 256Mi
        {{- if $sqlite }}
        - name: data
          {{- if $v.database.sqlite.persistence.enabled }}
          persistentVolumeClaim:
            claimName: {{ $name }}-data
          {{- else }}
          emptyDir: {}
          {{- end }}
        {{- end }}
        {{- if eq $v.auth.mode "rs256" }}
        - name: jwt-public-key
          secret:
            secretName: {{ $v.auth.rs256.existingSecret }}
            items:
              - key: {{ $v.auth.rs256.key }}
                path: {{ $v.auth.rs256.key }}
        {{- end }}
        {{- if $v.orgLimits.overrides }}
        - name: org-limits
          configMap:
            name: {{ include "switchboard.componentName" (dict "root" $root "component" "org-limits") }}
        {{- end }}
        {{- if $tlsSecret }}
        - name: tls
          secret:
            secretName: {{ $tlsSecret }}
        {{- end }}
        {{- with .volumes }}
        {{- . | nindent 8 }}
        {{- end }}
      {{- with $svc.nodeSelector }}
      nodeSelector:
        {{- toYaml . | nindent 8 }}
      {{- end }}
      {{- with $svc.tolerations }}
      tolerations:
        {{- toYaml . | nindent 8 }}
      {{- end }}
      affinity:
        {{- if $svc.affinity }}
        {{- toYaml $svc.affinity | nindent 8 }}
        {{- else }}
        # Replicas on distinct nodes where possible, so one node's loss
        # takes one replica.
        podAntiAffinity:
          preferredDuringSchedulingIgnoredDuringExecution:
            - weight: 100
              podAffinityTerm:
                topologyKey: kubernetes.io/hostname
                labelSelector:
                  matchLabels:
                    {{- include "switchboard.selectorLabels" . | nindent 20 }}
        {{- end }}
      {{- with $svc.topologySpreadConstraints }}
      topologySpreadConstraints:
        {{- toYaml . | nindent 8 }}
      {{- end }}
{{- end -}}
