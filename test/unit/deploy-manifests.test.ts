import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse, parseAllDocuments } from 'yaml';
import { Deployment } from 'kubernetes-models/apps/v1';
import { HorizontalPodAutoscaler } from 'kubernetes-models/autoscaling/v2';
import { Job } from 'kubernetes-models/batch/v1';
import { NetworkPolicy } from 'kubernetes-models/networking.k8s.io/v1';
import { PodDisruptionBudget } from 'kubernetes-models/policy/v1';
import { ConfigMap, Service } from 'kubernetes-models/v1';
import type { IDeploymentSpec } from 'kubernetes-models/apps/v1/DeploymentSpec';
import type { IHorizontalPodAutoscalerSpec } from 'kubernetes-models/autoscaling/v2/HorizontalPodAutoscalerSpec';
import type { INetworkPolicySpec } from 'kubernetes-models/networking.k8s.io/v1/NetworkPolicySpec';
import type { IPodDisruptionBudgetSpec } from 'kubernetes-models/policy/v1/PodDisruptionBudgetSpec';
import type { IContainer } from 'kubernetes-models/v1/Container';
import type { IServiceSpec } from 'kubernetes-models/v1/ServiceSpec';
import { CONFIG_VARIABLES, SECRET_VARIABLES, loadConfig } from '../../src/config.js';

// The Kustomize base in deploy/kubernetes/, checked without a cluster: every object against the
// Kubernetes API's schemas (kubernetes-models), every field name against the API's own, every
// environment variable against the configuration, and the objects against each other. Each rule
// runs on the real files and on a broken copy it must catch.

const DIR = join(process.cwd(), 'deploy/kubernetes');
const known = new Set(CONFIG_VARIABLES);
const secrets = new Set<string>(SECRET_VARIABLES);

/** The API objects the base may hold, by `apiVersion/kind`. */
/** Each takes the object as read from YAML (typed `never`: any shape may come) and validates it as its kind. */
const MODELS: Record<string, new (data: never) => { validate(): void }> = {
  'apps/v1/Deployment': Deployment,
  'v1/Service': Service,
  'v1/ConfigMap': ConfigMap,
  'autoscaling/v2/HorizontalPodAutoscaler': HorizontalPodAutoscaler,
  'policy/v1/PodDisruptionBudget': PodDisruptionBudget,
  'networking.k8s.io/v1/NetworkPolicy': NetworkPolicy,
  'batch/v1/Job': Job,
};

/**
 * Every field name the API's types declare (kubernetes-models' declarations). The JSON schemas
 * accept unknown fields, as the API server does by default, so a misspelt `readinessProbes` would
 * pass them and be dropped at apply: this catches it.
 */
function apiFieldNames(): Set<string> {
  const names = new Set<string>();
  const walk = (dir: string) => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      const path = join(dir, entry.name);
      if (entry.isDirectory()) walk(path);
      else if (entry.name.endsWith('.d.ts'))
        for (const m of readFileSync(path, 'utf8').matchAll(/^\s+"([A-Za-z$][\w$-]*)"\??:/gm)) names.add(m[1]);
    }
  };
  for (const pkg of ['kubernetes-models', '@kubernetes-models/apimachinery']) walk(join(process.cwd(), 'node_modules', pkg));
  return names;
}
const API_FIELDS = apiFieldNames();
/** Fields whose keys are the user's, not the API's. */
const FREE_FORM = new Set([
  'labels',
  'annotations',
  'matchLabels',
  'data',
  'binaryData',
  'stringData',
  'nodeSelector',
  'limits',
  'requests',
]);

function unknownFields(value: unknown, path: string): string[] {
  if (Array.isArray(value)) return value.flatMap((v, i) => unknownFields(v, `${path}[${i}]`));
  if (!value || typeof value !== 'object') return [];
  // A Service's selector is a plain map; a workload's is a LabelSelector.
  const plainSelector = path.endsWith('.selector') && !('matchLabels' in value) && !('matchExpressions' in value);
  return Object.entries(value).flatMap(([key, v]) => {
    if (FREE_FORM.has(key) || plainSelector) return [];
    return [...(API_FIELDS.has(key) ? [] : [`${path}.${key} is not a field of the Kubernetes API`]), ...unknownFields(v, `${path}.${key}`)];
  });
}

/** One API object of the base, as read from YAML: its spec is read as its kind's (the `spec` helpers below). */
type Obj = {
  apiVersion: string;
  kind: string;
  metadata: { name: string; labels?: Record<string, string> };
  spec?: unknown;
  data?: Record<string, string>;
};
type Container = IContainer & { image: string };
/** The spec of an object, read as its kind's (kubernetes-models' own types; the models validated the object first). */
const specOf = <S>(o: Obj) => (o.spec ?? {}) as S;

const readBase = () =>
  new Map(
    readdirSync(DIR)
      .filter((f) => /\.ya?ml$/.test(f))
      .map((f) => [f, readFileSync(join(DIR, f), 'utf8')]),
  );

/** What is wrong with the base, given its files by name; empty when all holds. */
function manifestProblems(files: Map<string, string>): string[] {
  const problems: string[] = [];
  const kustomization = parse(files.get('kustomization.yaml') ?? '{}') as {
    kind?: string;
    resources?: string[];
    images?: { name: string }[];
  };
  if (kustomization.kind !== 'Kustomization') problems.push('no kustomization.yaml');
  const listed = new Set(kustomization.resources ?? []);
  for (const file of files.keys())
    if (file !== 'kustomization.yaml' && !listed.has(file)) problems.push(`${file} is not in the kustomization's resources`);
  for (const file of listed) if (!files.has(file)) problems.push(`the kustomization lists ${file}, which does not exist`);

  const objects: Obj[] = [];
  for (const file of listed) {
    for (const doc of parseAllDocuments(files.get(file) ?? '')) {
      if (doc.errors.length) {
        problems.push(`${file}: ${doc.errors[0].message}`);
        continue;
      }
      const obj = doc.toJS() as Obj | null;
      if (!obj) continue;
      const where = `${file}: ${obj.kind} ${obj.metadata?.name}`;
      const Model = MODELS[`${obj.apiVersion}/${obj.kind}`];
      if (!Model) {
        problems.push(`${where}: ${obj.apiVersion} ${obj.kind} is not one the base may hold`);
        continue;
      }
      try {
        new Model(obj as never).validate();
      } catch (err) {
        problems.push(`${where}: ${(err as Error).message}`);
      }
      problems.push(...unknownFields(obj, where));
      objects.push(obj);
    }
  }
  const named = (kind: string, name: string) => objects.find((o) => o.kind === kind && o.metadata.name === name);
  const gateway = named('Deployment', 'mediagate-gateway');
  const worker = named('Deployment', 'mediagate-worker');
  if (!gateway || !worker) return [...problems, 'no mediagate-gateway or no mediagate-worker Deployment'];
  for (const kind of ['Service', 'HorizontalPodAutoscaler', 'PodDisruptionBudget', 'NetworkPolicy', 'ConfigMap'])
    if (!objects.some((o) => o.kind === kind)) problems.push(`no ${kind}`);

  const deployment = (d: Obj) => specOf<IDeploymentSpec>(d);
  const containerOf = (d: Obj): Container => deployment(d).template.spec!.containers[0] as Container;
  const podLabels = (d: Obj): Record<string, string> => deployment(d).template.metadata?.labels ?? {};
  const selects = (selector: Record<string, string> | undefined, labels: Record<string, string>) =>
    !!selector && Object.keys(selector).length > 0 && Object.entries(selector).every(([k, v]) => labels[k] === v);
  const images = new Set((kustomization.images ?? []).map((i) => i.name));

  // The variables each process gets: what the ConfigMaps it reads hold, then its own env.
  const envOf = (d: Obj, name: string): Record<string, string> => {
    const c = containerOf(d);
    const env: Record<string, string> = {};
    for (const from of c.envFrom ?? []) {
      if (from.secretRef) problems.push(`${name}: a whole Secret as environment (secretKeyRef each variable instead)`);
      const map = from.configMapRef ? named('ConfigMap', from.configMapRef.name ?? '') : undefined;
      if (from.configMapRef && !map) problems.push(`${name}: the ConfigMap ${from.configMapRef.name} is not in the base`);
      for (const [key, value] of Object.entries(map?.data ?? {})) {
        if (!known.has(key)) problems.push(`the ConfigMap sets ${key}, which the configuration does not know`);
        if (secrets.has(key)) problems.push(`the ConfigMap holds the secret ${key}`);
        env[key] = String(value);
      }
    }
    for (const e of c.env ?? []) {
      if (!known.has(e.name)) problems.push(`${name} sets ${e.name}, which the configuration does not know`);
      const ref = e.valueFrom?.secretKeyRef;
      if ((secrets.has(e.name) || e.name === 'DATABASE_URL') && !ref)
        problems.push(`${name}: ${e.name} is not read from a Secret (secretKeyRef)`);
      // The Secret's values are the operator's: stand-ins the configuration accepts.
      env[e.name] = ref
        ? e.name === 'DATABASE_URL'
          ? 'postgresql://mediagate:secret@postgres:5432/mediagate'
          : 's'.repeat(48)
        : (e.value ?? '');
    }
    for (const required of ['API_KEY_PEPPER', 'DATABASE_URL'])
      if (!c.env?.some((e) => e.name === required && e.valueFrom?.secretKeyRef))
        problems.push(`${name}: ${required} does not come from a secretKeyRef`);
    return env;
  };

  for (const [name, d, command] of [
    ['gateway', gateway, 'serve'],
    ['worker', worker, 'worker'],
  ] as const) {
    const c = containerOf(d);
    if (JSON.stringify(c.args) !== JSON.stringify([command]) || c.command)
      problems.push(`the ${name} does not run \`mediagate ${command}\` (args [${command}], the image's ENTRYPOINT)`);
    if (!images.has(c.image.split(':')[0])) problems.push(`the ${name}'s image ${c.image} is not the kustomization's`);
    if (!selects(deployment(d).selector?.matchLabels, podLabels(d)))
      problems.push(`the ${name} Deployment's selector does not match its pods`);
    if (!deployment(d).template.spec?.securityContext?.runAsNonRoot) problems.push(`the ${name} may run as root`);
    if (!c.resources?.requests?.memory || !c.resources?.limits?.memory) problems.push(`the ${name} has no memory request and limit`);
    try {
      const config = loadConfig(envOf(d, name));
      if (config.env !== 'production') problems.push(`the ${name} does not run with NODE_ENV=production`);
      if (name === 'gateway' && config.workerConcurrency !== 0)
        problems.push('the gateway works the queue beside the workers (WORKER_CONCURRENCY is not 0)');
      if (name === 'worker' && config.workerConcurrency < 1) problems.push('the worker works nothing');
      const preStop = Number(c.lifecycle?.preStop?.exec?.command?.[1] ?? c.lifecycle?.preStop?.sleep?.seconds ?? 0);
      const grace = deployment(d).template.spec?.terminationGracePeriodSeconds ?? 30;
      if (grace <= config.shutdownGraceMs / 1000 + preStop)
        problems.push(
          `the ${name}'s terminationGracePeriodSeconds (${grace}) is not above SHUTDOWN_GRACE_SECONDS (${config.shutdownGraceMs / 1000}) plus the preStop pause (${preStop})`,
        );
      if (name === 'gateway' && !c.ports?.some((p) => p.containerPort === config.port))
        problems.push(`the gateway's container port is not PORT (${config.port})`);
      if (
        name === 'gateway' &&
        config.metricsPort !== null &&
        !c.ports?.some((p) => p.name === 'metrics' && p.containerPort === config.metricsPort)
      )
        problems.push(`the gateway's port named metrics is not METRICS_PORT (${config.metricsPort})`);
      // The temporary volume holds what transcriptions may put there (their budget) and room for the rest (probes, yt-dlp).
      const mounts = c.volumeMounts ?? [];
      const volumes = deployment(d).template.spec?.volumes ?? [];
      const tmp = mounts.find((m) => m.mountPath === '/tmp');
      const volume = volumes.find((v) => v.name === tmp?.name);
      const size = quantityBytes(volume?.emptyDir?.sizeLimit);
      const transcriptions = Math.min(config.temp.maxBytes, config.mediaMaxBytes * config.temp.maxDownloads);
      if (size === null || size < transcriptions + TEMP_HEADROOM_BYTES)
        problems.push(
          `the ${name}'s /tmp (${volume?.emptyDir?.sizeLimit ?? 'no emptyDir sizeLimit'}) is smaller than what transcriptions may write there (${transcriptions} bytes: TEMP_MAX_BYTES, or MEDIA_MAX_BYTES × TEMP_MAX_DOWNLOADS) plus ${TEMP_HEADROOM_BYTES} bytes for the rest`,
        );
    } catch (err) {
      problems.push(`${name}: ${(err as Error).message}`);
    }
  }

  // The gateway's probes, and what routes to it.
  const g = containerOf(gateway);
  const port = g.ports?.[0];
  const probe = (kind: 'readinessProbe' | 'livenessProbe') => g[kind]?.httpGet;
  const isGatewayPort = (p: string | number | undefined) => p !== undefined && (p === port?.name || p === port?.containerPort);
  if (probe('readinessProbe')?.path !== '/readyz' || !isGatewayPort(probe('readinessProbe')?.port))
    problems.push('the gateway is not ready by /readyz on its port');
  if (probe('livenessProbe')?.path !== '/healthz' || !isGatewayPort(probe('livenessProbe')?.port))
    problems.push('the gateway is not live by /healthz on its port');
  const found = objects.find((o) => o.kind === 'Service');
  const service = found && specOf<IServiceSpec>(found);
  if (service && (!selects(service.selector, podLabels(gateway)) || selects(service.selector, podLabels(worker))))
    problems.push('the Service does not select the gateways alone');
  if (service && !service.ports?.every((p) => isGatewayPort(p.targetPort))) problems.push("the Service does not target the gateway's port");
  const hpaObject = objects.find((o) => o.kind === 'HorizontalPodAutoscaler');
  const hpa = hpaObject && specOf<IHorizontalPodAutoscalerSpec>(hpaObject);
  if (hpa && (hpa.scaleTargetRef.kind !== 'Deployment' || hpa.scaleTargetRef.name !== gateway.metadata.name))
    problems.push('the HorizontalPodAutoscaler does not scale the gateway');
  if (hpa && deployment(gateway).replicas !== undefined) problems.push('the gateway Deployment sets replicas, which the autoscaler owns');
  const pdbObject = objects.find((o) => o.kind === 'PodDisruptionBudget');
  const pdb = pdbObject && specOf<IPodDisruptionBudgetSpec>(pdbObject);
  if (pdb && !selects(pdb.selector?.matchLabels, podLabels(gateway))) problems.push('the PodDisruptionBudget does not cover the gateways');

  // The network: each process's pods fenced, the gateway open on its port, the way out to what it needs.
  for (const [name, d] of [
    ['gateway', gateway],
    ['worker', worker],
  ] as const) {
    const policy = objects
      .filter((o) => o.kind === 'NetworkPolicy')
      .map((o) => specOf<INetworkPolicySpec>(o))
      .find((spec) => selects(spec.podSelector?.matchLabels, podLabels(d)));
    if (!policy) {
      problems.push(`no NetworkPolicy selects the ${name}`);
      continue;
    }
    if (!(['Ingress', 'Egress'] as const).every((t) => policy.policyTypes?.includes(t)))
      problems.push(`the ${name}'s NetworkPolicy does not fence both directions`);
    const ingressPorts = (policy.ingress ?? []).flatMap((r) => (r.ports ?? [{ port: undefined }]).map((p) => p.port));
    // Its port, and the metrics port (METRICS_PORT) for Prometheus: the Service exposes the first alone.
    const metricsPort = g.ports?.find((p) => p.name === 'metrics');
    const admitted = (p: string | number | undefined) =>
      isGatewayPort(p) || (!!metricsPort && (p === metricsPort.name || p === metricsPort.containerPort));
    if (name === 'gateway' && (!ingressPorts.length || !ingressPorts.every(admitted)))
      problems.push("the gateway's NetworkPolicy does not admit its port (and its metrics port) alone");
    if (name === 'worker' && ingressPorts.length) problems.push("the worker's NetworkPolicy admits connections");
    const egress = policy.egress ?? [];
    const reaches = (port: number, protocol = 'TCP') =>
      egress.some((r) => r.ports?.some((p) => p.port === port && (p.protocol ?? 'TCP') === protocol));
    for (const [what, p, protocol] of [
      ['DNS', 53, 'UDP'],
      ['PostgreSQL', 5432, 'TCP'],
      ['Redis', 6379, 'TCP'],
    ] as const)
      if (!reaches(p, protocol)) problems.push(`the ${name} cannot reach ${what}`);
    const internet = egress.find((r) => !r.ports && r.to?.some((t) => t.ipBlock?.cidr === '0.0.0.0/0'));
    if (!internet) problems.push(`the ${name} cannot reach the internet for pages and media`);
    else if (!['10.0.0.0/8', '169.254.0.0/16'].every((c) => internet.to?.some((t) => t.ipBlock?.except?.includes(c))))
      problems.push(`the ${name}'s way to the internet also reaches private addresses`);
  }
  return problems;
}

/** Room on /tmp besides transcriptions: probes' files, yt-dlp's, the embedded database's socket. */
const TEMP_HEADROOM_BYTES = 512 * 1024 ** 2;

/** A Kubernetes quantity (`3Gi`, `512Mi`, `2G`, bytes) in bytes; null when absent or unreadable. */
function quantityBytes(q: string | number | undefined): number | null {
  if (q === undefined) return null;
  const m = /^(\d+(?:\.\d+)?)(Ki|Mi|Gi|Ti|k|M|G|T)?$/.exec(String(q));
  if (!m) return null;
  const units: Record<string, number> = { Ki: 1024, Mi: 1024 ** 2, Gi: 1024 ** 3, Ti: 1024 ** 4, k: 1e3, M: 1e6, G: 1e9, T: 1e12 };
  return Number(m[1]) * (m[2] ? units[m[2]] : 1);
}

describe('deploy/kubernetes', () => {
  const files = readBase();

  it('every manifest validates against the Kubernetes API, and together they run gateways and workers as the configuration expects', () => {
    expect(manifestProblems(files)).toEqual([]);
  });

  it('a Deployment the API would refuse fails validation (kubernetes-models)', () => {
    const container = { name: 'gateway', image: 'mediagate', ports: [{ containerPort: 'http' }] };
    const broken = new Deployment({
      metadata: { name: 'x' },
      // @ts-expect-error a port by name where the API wants a number: what validation must catch
      spec: { selector: {}, template: { spec: { containers: [container] } } },
    });
    expect(() => broken.validate()).toThrow(/containerPort must be integer/);
    // @ts-expect-error no selector: what validation must catch
    expect(() => new Deployment({ metadata: { name: 'x' }, spec: { template: {} } }).validate()).toThrow(/selector/);
  });

  const swap = (file: string, from: string | RegExp, to: string) => {
    const text = files.get(file)!;
    const out = typeof from === 'string' ? text.split(from).join(to) : text.replace(from, to);
    if (out === text) throw new Error(`the broken copy of ${file} did not change: ${from}`);
    return new Map(files).set(file, out);
  };

  it.each([
    [
      'a schema error',
      () => swap('gateway-deployment.yaml', 'containerPort: 4000', 'containerPort: "4000"'),
      'containerPort must be integer',
    ],
    ['a misspelt field', () => swap('gateway-deployment.yaml', 'readinessProbe:', 'readinessProbes:'), 'readinessProbes is not a field'],
    ['a YAML error', () => swap('gateway-hpa.yaml', 'minReplicas: 2', 'minReplicas: [2'), 'gateway-hpa.yaml'],
    [
      'an unlisted file',
      () => new Map(files).set('extra.yaml', files.get('gateway-pdb.yaml')!),
      "extra.yaml is not in the kustomization's resources",
    ],
    [
      'a listed file missing',
      () => new Map([...files].filter(([f]) => f !== 'gateway-pdb.yaml')),
      'lists gateway-pdb.yaml, which does not exist',
    ],
    ['an unknown kind', () => swap('gateway-service.yaml', 'kind: Service', 'kind: Ingress'), 'is not one the base may hold'],
    [
      'an unknown variable',
      () => swap('configmap.yaml', 'LOG_LEVEL: info', 'LOG_LEVEL: info\n  LOGLEVEL: info'),
      'LOGLEVEL, which the configuration does not know',
    ],
    [
      'an invalid value',
      () => swap('configmap.yaml', 'PARSE_PROVIDERS: builtin,ytdlp', 'PARSE_PROVIDERS: builtin,youtube'),
      'PARSE_PROVIDERS',
    ],
    [
      'a secret in the ConfigMap',
      () => swap('configmap.yaml', 'LOG_LEVEL: info', 'LOG_LEVEL: info\n  METRICS_TOKEN: abcdefghijklmnopqrstuvwxyz'),
      'holds the secret METRICS_TOKEN',
    ],
    [
      'a pepper in plain text',
      () =>
        swap(
          'worker-deployment.yaml',
          /- name: API_KEY_PEPPER\n\s+valueFrom:\n\s+secretKeyRef:\n\s+name: mediagate\n\s+key: api-key-pepper/,
          `- name: API_KEY_PEPPER\n              value: ${'x'.repeat(40)}`,
        ),
      'API_KEY_PEPPER is not read from a Secret',
    ],
    ['the gateway works the queue', () => swap('gateway-deployment.yaml', 'value: "0"', 'value: "2"'), 'WORKER_CONCURRENCY is not 0'],
    ['the worker serves', () => swap('worker-deployment.yaml', 'args: ["worker"]', 'args: ["serve"]'), 'does not run `mediagate worker`'],
    [
      'a short grace period',
      () => swap('gateway-deployment.yaml', 'terminationGracePeriodSeconds: 45', 'terminationGracePeriodSeconds: 30'),
      "gateway's terminationGracePeriodSeconds (30) is not above",
    ],
    [
      'a longer drain than the grace period',
      () => swap('configmap.yaml', 'SHUTDOWN_GRACE_SECONDS: "30"', 'SHUTDOWN_GRACE_SECONDS: "60"'),
      'is not above SHUTDOWN_GRACE_SECONDS (60)',
    ],
    ['readiness on /healthz', () => swap('gateway-deployment.yaml', 'path: /readyz', 'path: /healthz'), 'not ready by /readyz'],
    [
      'a Service on another port',
      () => swap('gateway-service.yaml', 'targetPort: http', 'targetPort: 8080'),
      "does not target the gateway's port",
    ],
    [
      'an autoscaler on the workers',
      () => swap('gateway-hpa.yaml', 'name: mediagate-gateway\n  minReplicas', 'name: mediagate-worker\n  minReplicas'),
      'does not scale the gateway',
    ],
    ['a policy without DNS', () => swap('networkpolicy.yaml', /protocol: UDP/g, 'protocol: TCP'), 'cannot reach DNS'],
    [
      'a policy open to private addresses',
      () => swap('networkpolicy.yaml', /except: \[10\.0\.0\.0\/8, /g, 'except: ['),
      'also reaches private addresses',
    ],
    ['another image', () => swap('worker-deployment.yaml', 'image: mediagate', 'image: mediagate-dev'), 'is not the kustomization'],
  ])('the check catches %s', (_label, breakIt, problem) => {
    expect(manifestProblems(breakIt()).join('\n')).toContain(problem);
  });
});
