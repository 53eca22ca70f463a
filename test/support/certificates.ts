/**
 * TLS certificates for tests, made with the openssl CLI in a temporary folder of their own: a
 * self-signed certificate (for a receiver, or as a CA), and certificates that CA signs.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';

/** A key and its certificate, in PEM, and the certificate's file. */
export interface TestCertificate {
  key: string;
  certificate: string;
  /** The certificate's PEM file (for CALLBACK_CA_FILE). */
  file: string;
}

/** The certificates of one test, in a folder removed by `remove`. */
export interface TestCertificates {
  /**
   * A self-signed certificate for `subject` (`/CN=…`), valid 2 days, with `extension` (such as
   * `subjectAltName=IP:127.0.0.1`) when given.
   */
  selfSigned(name: string, subject: string, extension?: string): TestCertificate;
  /** A certificate for `subject` signed by `ca` (one of {@link selfSigned}), with `extension`. */
  issue(name: string, ca: TestCertificate, subject: string, extension: string): TestCertificate;
  remove(): void;
}

/** Starts a folder of certificates; every key is RSA 2048 without a passphrase. */
export function testCertificates(): TestCertificates {
  const dir = mkdtempSync(path.join(tmpdir(), 'wh-certs-'));
  const file = (name: string) => path.join(dir, name);
  const openssl = (...args: string[]) => execFileSync('openssl', args, { cwd: dir, stdio: 'pipe' });
  const read = (name: string): TestCertificate => ({
    key: readFileSync(file(`${name}.key`), 'utf8'),
    certificate: readFileSync(file(`${name}.pem`), 'utf8'),
    file: file(`${name}.pem`),
  });
  return {
    selfSigned(name, subject, extension) {
      openssl(
        ...['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', `${name}.key`, '-subj', subject],
        ...(extension === undefined ? [] : ['-addext', extension]),
        ...['-days', '2', '-out', `${name}.pem`],
      );
      return read(name);
    },
    issue(name, ca, subject, extension) {
      const caName = path.basename(ca.file, '.pem');
      openssl(
        'req',
        '-newkey',
        'rsa:2048',
        '-nodes',
        '-keyout',
        `${name}.key`,
        '-subj',
        subject,
        '-out',
        `${name}.csr`,
      );
      writeFileSync(file(`${name}.ext`), extension);
      openssl(
        ...['x509', '-req', '-in', `${name}.csr`, '-CA', `${caName}.pem`, '-CAkey', `${caName}.key`],
        ...['-CAcreateserial', '-days', '2', '-extfile', `${name}.ext`, '-out', `${name}.pem`],
      );
      return read(name);
    },
    remove: () => rmSync(dir, { recursive: true, force: true }),
  };
}
