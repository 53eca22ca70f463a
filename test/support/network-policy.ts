/**
 * What rendered NetworkPolicies allow, read as the Kubernetes docs define them ("Network Policies",
 * kubernetes.io/docs/concepts/services-networking/network-policies): a pod selected by a policy of a
 * direction admits only what some rule of those policies allows; one selected by none admits all.
 * Enough of the model for the manifests' test: label selectors (matchLabels, `In` expressions),
 * namespaces by `kubernetes.io/metadata.name`, IPv4 blocks with exceptions, and ports by number
 * or by the pod's port name.
 */

/* eslint-disable @typescript-eslint/no-explicit-any -- rendered manifests are untyped YAML */
type Manifest = Record<string, any>;

/** A pod as a policy sees it: its namespace, labels and named ports. */
export interface PodView {
  namespace: string;
  labels: Record<string, string>;
  /** Port name → number, from its containers. */
  ports?: Record<string, number>;
}

/** The other end of a connection: a pod, or an address outside the cluster. */
export type Peer = { pod: PodView } | { ip: string };

/** Whether `selector` (matchLabels, matchExpressions with In/NotIn/Exists) selects `labels`. */
export function selects(selector: Manifest | undefined, labels: Record<string, string>): boolean {
  if (selector === undefined) return true;
  for (const [key, value] of Object.entries(selector.matchLabels ?? {}))
    if (labels[key] !== value) return false;
  for (const { key, operator, values } of selector.matchExpressions ?? []) {
    if (operator === 'In' && !(values as string[]).includes(labels[key] ?? '\u0000')) return false;
    if (operator === 'NotIn' && (values as string[]).includes(labels[key] ?? '\u0000')) return false;
    if (operator === 'Exists' && labels[key] === undefined) return false;
  }
  return true;
}

const ipv4 = (address: string) => address.split('.').reduce((n, part) => n * 256 + Number(part), 0);

/** Whether IPv4 `address` is in `cidr` (an IPv6 block never holds it). */
function inCidr(address: string, cidr: string): boolean {
  const [base = '', bits = '32'] = cidr.split('/');
  if (base.includes(':')) return false;
  const size = 2 ** (32 - Number(bits));
  return Math.floor(ipv4(address) / size) === Math.floor(ipv4(base) / size);
}

/** Whether one `from`/`to` entry matches `peer`, the policy living in `namespace`. */
function peerMatches(entry: Manifest, peer: Peer, namespace: string): boolean {
  if (entry.ipBlock !== undefined) {
    if (!('ip' in peer)) return false;
    const { cidr, except = [] } = entry.ipBlock as { cidr: string; except?: string[] };
    return inCidr(peer.ip, cidr) && !except.some((block) => inCidr(peer.ip, block));
  }
  if (!('pod' in peer)) return false;
  const namespaceMatches =
    entry.namespaceSelector === undefined
      ? peer.pod.namespace === namespace
      : selects(entry.namespaceSelector, { 'kubernetes.io/metadata.name': peer.pod.namespace });
  return namespaceMatches && selects(entry.podSelector, peer.pod.labels);
}

/**
 * Whether the policies in `objects` let `pod` connect to `peer` on `port`/`protocol` (egress), or
 * `peer` connect to `pod` there (ingress).
 */
export function allowed(
  objects: Manifest[],
  direction: 'Ingress' | 'Egress',
  pod: PodView,
  peer: Peer,
  port: number,
  protocol: 'TCP' | 'UDP' = 'TCP',
): boolean {
  const policies = objects.filter(
    (o) =>
      o.kind === 'NetworkPolicy' &&
      (o.metadata.namespace ?? pod.namespace) === pod.namespace &&
      (o.spec.policyTypes as string[]).includes(direction) &&
      selects(o.spec.podSelector, pod.labels),
  );
  if (policies.length === 0) return true;
  // A named port is the destination pod's: the pod's own on ingress, the peer's on egress.
  const namedPorts = direction === 'Ingress' ? pod.ports : 'pod' in peer ? peer.pod.ports : undefined;
  const portMatches = (rule: Manifest) =>
    rule.ports === undefined ||
    (rule.ports as Manifest[]).some(
      (p) =>
        (p.protocol ?? 'TCP') === protocol &&
        (p.port === undefined || (typeof p.port === 'number' ? p.port : namedPorts?.[p.port]) === port),
    );
  return policies.some((policy) =>
    ((direction === 'Ingress' ? policy.spec.ingress : policy.spec.egress) ?? []).some(
      (rule: Manifest) =>
        portMatches(rule) &&
        (rule[direction === 'Ingress' ? 'from' : 'to'] === undefined ||
          (rule[direction === 'Ingress' ? 'from' : 'to'] as Manifest[]).some((entry) =>
            peerMatches(entry, peer, policy.metadata.namespace ?? pod.namespace),
          )),
    ),
  );
}

/** The pod view of `workload` (a Deployment or StatefulSet) in the rendered `objects`. */
export function podOf(workload: Manifest): PodView {
  const ports: Record<string, number> = {};
  for (const container of workload.spec.template.spec.containers)
    for (const port of container.ports ?? [])
      if (port.name !== undefined) ports[port.name] = port.containerPort;
  return { namespace: workload.metadata.namespace, labels: workload.spec.template.metadata.labels, ports };
}
