import { BaseSequencer, type TestSpecification } from 'vitest/node';

/**
 * Vitest's order, with the `citus` project's two heaviest files kept apart: the large export first among
 * the Citus files, the isolation property after them. Side by side, the isolation property took
 * 327-356 s (140 s alone) and the export 245-262 s (103 s alone), past its 240 s bound: the cluster's
 * three servers and two files' services on 2 cores. The export ends (91-103 s) before the other
 * Citus files do (about 130 s of them on the other worker), so the isolation property starts after it.
 * The order is the usual case; what keeps them apart when the export is slower is a lock both take
 * (`aloneOnTheCluster`, test/support/databases/test-database.ts).
 */
export default class CitusApartSequencer extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const sorted = await super.sort(files);
    const largeExport = takeCitusFile(sorted, 'test/api/routes/gdpr/gdpr-large-export.test.ts');
    const property = takeCitusFile(sorted, 'test/api/plugins/auth/isolation-property.test.ts');
    // Vitest sorts all files at once, then splits them into groups in this order: the Citus group
    // (groupOrder 1) starts with the export and ends with the property.
    return [...(largeExport ? [largeExport] : []), ...sorted, ...(property ? [property] : [])];
  }
}

function takeCitusFile(specs: TestSpecification[], file: string): TestSpecification | undefined {
  const index = specs.findIndex((spec) => spec.project.name === 'citus' && spec.moduleId.endsWith(file));
  return index < 0 ? undefined : specs.splice(index, 1)[0];
}
