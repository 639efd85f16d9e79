export {
  NamesrvController,
  type NamesrvConfigAccess,
  type NamesrvAdmin,
  type NamesrvInfo,
  type NamesrvOptions,
  type NamesrvRuntimeOptions,
  type LiveBrokerInfo,
} from "./namesrv.ts";
export { RouteInfoManager } from "./route-info-manager.ts";
export {
  encodeRegisterBrokerBody,
  encodeRegisterBrokerBodyCompressed,
  decodeRegisterBrokerBody,
  type RegisterBrokerBody,
} from "../protocol/register-broker-body.ts";
