/**
 * The Kubernetes manifests (deploy/kubernetes), rendered per overlay by the real kustomize
 * (`kubectl kustomize`, Debian's kubectl; scripts/ensure-kubectl.sh installs it) and validated
 * against the Kubernetes API schemas (kubernetes-models, @kubernetes-models/keda), then held to
 * the rules that keep them true to the services: probes, resources and a restricted security
 * context on every container; environment names the services' schemas know, with every setting
 * production requires; probe paths and ports the services answer on; a worker grace period that
 * covers its drain; a lag query over metrics the worker exports; network policies that keep each
 * service to DNS, its databases and public addresses, and let in only the API's port (and, in dev,
 * the databases only to the service); and TRUST_PROXY set for the production ingress.
 */
import { execFileSync } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { parseAllDocuments } from 'yaml';
import { apiEnvSchema, loadApiConfig } from '@webhooks/api';
import { loadWorkerConfig, workerEnvSchema } from '@webhooks/worker';
import { createWorkerMetrics } from '../apps/worker/src/metrics.js';
import { startTestApi, type TestApi } from './support/api.js';
import { allowed, podOf } from './support/network-policy.js';
import { repositoryRoot } from '../scripts/lib/repository-root.js';
import { waitFor } from '../scripts/lib/wait.js';

/* eslint-disable @typescript-eslint/no-explicit-any -- rendered manifests are untyped YAML */
type Manifest = Record<string, any>;

const overlays = ['dev', 'production'];

/** The objects `kubectl kustomize` renders for `overlay`. */
function render(overlay: string): Manifest[] {
  const text = execFileSync('kubectl', ['kustomize', `deploy/kubernetes/overlays/${overlay}`], {
    cwd: repositoryRoot(),
    encoding: 'utf8',
  });
  return parseAllDocuments(text).map((document) => document.toJS() as Manifest);
}

/** The kubernetes-models class of `apiVersion` and `kind`, whose `validate()` throws on a bad object. */
async function modelOf({
  apiVersion,
  kind,
}: Manifest): Promise<new (data: Manifest) => { validate(): void }> {
  const [group, version] = String(apiVersion).includes('/')
    ? String(apiVersion).split('/')
    : ['', apiVersion];
  const module: Record<string, any> =
    group === 'keda.sh'
      ? await import(`@kubernetes-models/keda/keda.sh/${version}`)
      : await import(group === '' ? `kubernetes-models/${version}` : `kubernetes-models/${group}/${version}`);
  const model = module[kind as string];
  if (model === undefined) throw new Error(`no schema for ${apiVersion} ${kind}`);
  return model;
}

/** `data` with the line breaks taken out of each base64 value. */
const unwrapped = (data: Record<string, string>) =>
  Object.fromEntries(Object.entries(data).map(([key, value]) => [key, value.replace(/\s/g, '')]));

/** Dummy values of the Secrets' keys, valid in form, as an operator's would be. */
const secretValues: Record<string, string> = {
  JWT_SECRET: 'k'.repeat(64),
  SECRETS_ENCRYPTION_KEY: Buffer.alloc(32, 1).toString('base64'),
  METRICS_TOKEN: 'm'.repeat(32),
  DATABASE_URL: 'postgresql://webhooks:password@db.internal.example:5432/webhooks',
  REDIS_URL: 'redis://:password@redis.internal.example:6379',
};

/** The environment a container runs with: its ConfigMaps' data, its values, its Secrets' keys. */
function environmentOf(container: Manifest, objects: Manifest[]): Record<string, string> {
  const env: Record<string, string> = {};
  for (const source of container.envFrom ?? []) {
    const map = objects.find((o) => o.kind === 'ConfigMap' && o.metadata.name === source.configMapRef?.name);
    if (map === undefined) throw new Error(`envFrom names a missing ConfigMap ${JSON.stringify(source)}`);
    Object.assign(env, map.data);
  }
  for (const { name, value, valueFrom } of container.env ?? []) {
    const key = valueFrom?.secretKeyRef?.key;
    env[name] = value ?? secretValues[key] ?? `missing ${key}`;
  }
  return env;
}

/** The service a container runs, by its image: 'api', 'worker' or null (a database). */
function serviceOf(container: Manifest): 'api' | 'worker' | null {
  const image = String(container.image);
  if (image.startsWith('webhooks/api:')) return 'api';
  if (image.startsWith('webhooks/worker:')) return 'worker';
  return null;
}

const workloads = (objects: Manifest[]) =>
  objects.filter((o) => o.kind === 'Deployment' || o.kind === 'StatefulSet');

const rendered = new Map(overlays.map((overlay) => [overlay, render(overlay)]));

describe.each(overlays)('the %s overlay', (overlay) => {
  const objects = rendered.get(overlay)!;

  it('renders objects that the Kubernetes API schemas accept', async () => {
    expect(objects.length).toBeGreaterThan(5);
    for (const object of objects) {
      const Model = await modelOf(object);
      // kustomize wraps a long Secret value's base64 over lines, which the API server's decoder
      // skips and the schema's `byte` format does not.
      const data = object.kind === 'Secret' ? { data: unwrapped(object.data) } : {};
      expect(() => new Model({ ...object, ...data }).validate()).not.toThrow();
    }
  });

  it('gives every container probes, resources and a restricted security context, as non-root', () => {
    for (const workload of workloads(objects)) {
      const pod = workload.spec.template.spec;
      expect([workload.metadata.name, pod.securityContext]).toEqual([
        workload.metadata.name,
        expect.objectContaining({ runAsNonRoot: true, seccompProfile: { type: 'RuntimeDefault' } }),
      ]);
      for (const container of [...(pod.initContainers ?? []), ...pod.containers]) {
        const where = `${workload.metadata.name}/${container.name}`;
        expect([where, container.securityContext]).toEqual([
          where,
          {
            allowPrivilegeEscalation: false,
            readOnlyRootFilesystem: true,
            capabilities: { drop: ['ALL'] },
          },
        ]);
        expect([where, container.resources.requests]).toEqual([
          where,
          { cpu: expect.anything(), memory: expect.anything() },
        ]);
        expect([where, container.resources.limits?.memory]).toEqual([where, expect.anything()]);
      }
      for (const container of pod.containers) {
        expect([container.name, container.readinessProbe, container.livenessProbe]).toEqual([
          container.name,
          expect.anything(),
          expect.anything(),
        ]);
      }
    }
  });

  it('sets only variables the services know, and every one production requires', () => {
    for (const workload of workloads(objects)) {
      const pod = workload.spec.template.spec;
      for (const container of [...(pod.initContainers ?? []), ...pod.containers]) {
        const service = serviceOf(container);
        if (service === null || container.name === 'migrate') continue;
        const env = environmentOf(container, objects);
        const known = Object.keys((service === 'api' ? apiEnvSchema : workerEnvSchema).properties);
        expect(Object.keys(env).filter((name) => !known.includes(name))).toEqual([]);
        expect(Object.values(env).filter((value) => value.startsWith('missing '))).toEqual([]);
        expect(env.NODE_ENV).toBe('production');
        expect(() => (service === 'api' ? loadApiConfig(env) : loadWorkerConfig(env))).not.toThrow();
      }
    }
  });

  it('probes each service on its own port, and gives a worker time to drain', () => {
    for (const workload of workloads(objects)) {
      const pod = workload.spec.template.spec;
      for (const container of pod.containers) {
        const service = serviceOf(container);
        if (service === null) continue;
        const env = environmentOf(container, objects);
        const port = service === 'api' ? env.PORT : env.WORKER_HEALTH_PORT;
        const named = Object.fromEntries(
          (container.ports as Manifest[]).map((p) => [p.name, String(p.containerPort)]),
        );
        for (const [probe, path] of [
          ['startupProbe', '/healthz'],
          ['livenessProbe', '/healthz'],
          ['readinessProbe', '/readyz'],
        ] as const) {
          const { httpGet } = container[probe];
          expect([container.name, probe, httpGet.path, named[httpGet.port] ?? String(httpGet.port)]).toEqual([
            container.name,
            probe,
            path,
            port,
          ]);
        }
        if (service === 'worker') {
          // The attempts in flight end within DELIVERY_TIMEOUT_MS, then are recorded.
          const config = loadWorkerConfig(env);
          expect(pod.terminationGracePeriodSeconds * 1000).toBeGreaterThanOrEqual(
            config.DELIVERY_TIMEOUT_MS + 10_000,
          );
        }
      }
    }
  });

  it('lets the services reach only DNS, their databases and public addresses, and reach the API alone on its port', () => {
    const named = (name: string) => {
      const workload = workloads(objects).find((o) => o.metadata.name === name);
      if (workload === undefined) throw new Error(`no workload ${name}`);
      return podOf(workload);
    };
    const namespace = named('webhooks-api').namespace;
    const stranger = { pod: { namespace, labels: { app: 'something-else' } } };
    const dns = { pod: { namespace: 'kube-system', labels: { 'k8s-app': 'kube-dns' } } };
    for (const name of ['webhooks-api', 'webhooks-fanout', 'webhooks-worker']) {
      const pod = named(name);
      const out = (peer: Parameters<typeof allowed>[3], port: number, protocol?: 'TCP' | 'UDP') =>
        [name, peer, port, allowed(objects, 'Egress', pod, peer, port, protocol)] as const;
      for (const [peer, port, protocol] of [
        [dns, 53, 'UDP'],
        [{ ip: '93.184.216.34' }, 443],
        [{ ip: '10.1.2.3' }, 5432],
        [{ ip: '10.1.2.3' }, 6379],
      ] as const)
        expect(out(peer, port, protocol)).toEqual([name, peer, port, true]);
      for (const [peer, port] of [
        [{ ip: '169.254.169.254' }, 80],
        [{ ip: '10.1.2.3' }, 443],
        [{ ip: '192.168.1.10' }, 8080],
        [{ ip: '172.20.0.1' }, 443],
        [{ ip: '127.0.0.1' }, 3000],
      ] as const)
        expect(out(peer, port)).toEqual([name, peer, port, false]);
      // From another pod of the namespace: the API's port only.
      const ports = Object.values(pod.ports ?? {});
      for (const port of ports)
        expect([name, port, allowed(objects, 'Ingress', pod, stranger, port)]).toEqual([
          name,
          port,
          name === 'webhooks-api',
        ]);
    }
    // Prometheus scrapes the workers from its namespace.
    const prometheus = { pod: { namespace: 'monitoring', labels: { app: 'prometheus' } } };
    expect(allowed(objects, 'Ingress', named('webhooks-worker'), prometheus, 3001)).toBe(true);
    if (overlay === 'dev')
      for (const database of ['webhooks-postgres', 'webhooks-redis']) {
        const pod = named(database);
        const port = Object.values(pod.ports ?? {})[0]!;
        expect([database, allowed(objects, 'Ingress', pod, { pod: named('webhooks-worker') }, port)]).toEqual(
          [database, true],
        );
        expect([database, allowed(objects, 'Ingress', pod, stranger, port)]).toEqual([database, false]);
      }
  });

  it('believes the ingress in front of the API in production, and nothing in dev', () => {
    const api = workloads(objects).find((o) => o.metadata.name === 'webhooks-api')!;
    const container = api.spec.template.spec.containers.find((c: Manifest) => c.name === 'api');
    const env = environmentOf(container, objects);
    expect(env.TRUST_PROXY).toBe(overlay === 'production' ? '1' : undefined);
    expect(() => loadApiConfig(env)).not.toThrow();
  });

  it('scales the delivery workers on a lag the worker exports, if at all', () => {
    const scaled = objects.filter((o) => o.kind === 'ScaledObject');
    const exported = createWorkerMetrics()
      .registry.getMetricsAsArray()
      .map((metric) => metric.name);
    for (const object of scaled) {
      const target = objects.find(
        (o) => o.kind === 'Deployment' && o.metadata.name === object.spec.scaleTargetRef.name,
      );
      expect(target?.spec.template.spec.containers[0].env).toEqual(
        expect.arrayContaining([{ name: 'WORKER_QUEUES', value: 'deliveries' }]),
      );
      for (const trigger of object.spec.triggers) {
        const names: string[] = trigger.metadata.query.match(/webhook_[a-z_]+/g);
        expect(names.filter((name) => !exported.includes(name))).toEqual([]);
      }
    }
    expect(scaled.length).toBe(overlay === 'production' ? 1 : 0);
  });
});

describe('the API’s probe paths', () => {
  let api: TestApi;
  beforeAll(async () => {
    api = await startTestApi('kubernetes');
  });
  afterAll(() => api.close());

  it('are answered by the API', async () => {
    expect((await api.app.inject({ method: 'GET', url: '/healthz' })).statusCode).toBe(200);
    // Readiness waits for PostgreSQL and Redis to answer; a kubelet asks again until they do (a
    // fresh API's first query can take longer than the probe's 2 s on a loaded machine).
    await waitFor(
      '/readyz to answer 200',
      async () => (await api.app.inject({ method: 'GET', url: '/readyz' })).statusCode === 200,
    );
  });
});
