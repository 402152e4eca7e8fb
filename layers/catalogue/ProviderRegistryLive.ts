/** The provider-plugin registry: filled by the plugin Layers at start, read when the catalogue is built. */
import { ProviderRegistry } from "../../services/Providers.ts"
import { registryLive } from "../platform/RegistryLive.ts"

export const ProviderRegistryLive = registryLive(ProviderRegistry, "provider plugin")
