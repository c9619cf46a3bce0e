import { dirname, join } from 'node:path';
import type { ModelSpec } from '../../../federation/index.ts';
import { modelLayout } from '../../../federation/index.ts';
import type { SiteConfig } from '../../config/index.ts';
import { contractFeatureCount } from '../../data/index.ts';
import { InvalidArgumentError } from '../../errors/index.ts';
import { createExternalTrainer, type ExternalTrainer } from '../../trainer/index.ts';
import type { MemberContext } from '../member-context.ts';

/**
 * The site's own trainer process (site configuration `trainer`), asked once at start what it
 * trains on (`describe`): its training rows are the site's FedAvg weight. Its command runs from the
 * site configuration's folder, its calls in `<paths.dataDir>/<member>/trainer/`. Null without one.
 *
 * @throws InvalidArgumentError when what it describes does not fit the model or the data contract
 *   (classes, features): the agent then never joins.
 */
export async function openSiteTrainer(
  ctx: MemberContext,
  siteConfig: SiteConfig | null,
  spec: ModelSpec,
): Promise<ExternalTrainer | null> {
  const settings = siteConfig?.trainer;
  if (settings === undefined) return null;
  const trainer = createExternalTrainer({
    command: [...settings.command],
    workDir: join(ctx.config.paths.dataDir, ctx.member, 'trainer'),
    timeoutMs: settings.timeoutMs,
    ...(siteConfig?.file === undefined ? {} : { cwd: dirname(siteConfig.file) }),
  });
  const described = await trainer.describe();
  const layout = modelLayout(spec);
  const classes = layout.layers[layout.layers.length - 1]!.outputs;
  if (described.classes !== undefined && described.classes !== classes) {
    throw new InvalidArgumentError(
      `the site's trainer reports ${described.classes} classes, the model has ${classes}`,
    );
  }
  const contract = ctx.config.data;
  const features = contract === undefined ? undefined : contractFeatureCount(contract);
  const own = (described as { readonly features?: number }).features;
  if (features !== undefined && own !== undefined && own !== features) {
    throw new InvalidArgumentError(
      `the site's trainer reports ${own} features per row, the data contract names ${features}`,
    );
  }
  ctx.log.info(
    { examples: described.examples, validation: described.validationExamples, command: settings.command[0] },
    "the site's own trainer is ready",
  );
  return trainer;
}
