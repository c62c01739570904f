import { BaseSequencer, type TestSpecification } from 'vitest/node';

/**
 * Vitest's order, with the `citus` project's two heaviest files kept apart: the large export first among
 * the Citus files, the isolation property after them. Side by side, the isolation property took
 * 327-356 s (140 s alone) and the export 245-262 s (103 s alone), past its 240 s bound: the cluster's
 * three servers and two files' services on 2 cores. The export ends (91-103 s) before the other
 * Citus files do (about 130 s of them on the other worker), so the isolation property starts after it.
 */
export default class CitusApartSequencer extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const sorted = await super.sort(files);
    const largeExport = takeCitusFile(sorted, 'test/api/privacy/gdpr-large-export.test.ts');
    const property = takeCitusFile(sorted, 'test/api/access/isolation-property.test.ts');
    if (largeExport) sorted.splice(Math.max(0, sorted.findIndex(isCitus)), 0, largeExport);
    if (property) {
      const afterCitus = sorted.reduce((after, spec, i) => (isCitus(spec) ? i + 1 : after), 0);
      sorted.splice(afterCitus, 0, property);
    }
    return sorted;
  }
}

const isCitus = (spec: TestSpecification) => spec.project.name === 'citus';

function takeCitusFile(specs: TestSpecification[], file: string): TestSpecification | undefined {
  const index = specs.findIndex((spec) => isCitus(spec) && spec.moduleId.endsWith(file));
  return index < 0 ? undefined : specs.splice(index, 1)[0];
}
