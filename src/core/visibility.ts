/**
 * Which rows a standard read returns (docs/architecture.md §8): `visible` ones always, `inactive` ones
 * (superseded history) only when asked, `hidden` ones never. The store's pages, the page's
 * window and `assembleSessionDetail` all answer with this one rule.
 */
import type { Visibility } from '../schema/common'

export const isReadable = (visibility: Visibility, includeInactive: boolean): boolean =>
  visibility === 'visible' || (includeInactive && visibility === 'inactive')
