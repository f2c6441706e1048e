import { firefoxKind } from './drivers/firefox'
import { contractSuite } from './scenarios'

contractSuite(firefoxKind)
