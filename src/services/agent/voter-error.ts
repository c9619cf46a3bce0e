/** The error a vote NO is made of: its message is the reason. */
export class VoteNo extends Error {}
