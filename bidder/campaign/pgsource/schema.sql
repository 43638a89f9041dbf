-- The campaigns table of campaigns.source: postgres. One row per campaign:
--   id          the campaign id (the YAML's id: letters, digits, - _ . :)
--   enabled     false stops the campaign at the next refresh, as deleting
--               the row does
--   updated_at  when the row last changed, for people and tools: rtbd reads
--               the whole table every refresh, whatever it says
--   spec        the campaign as a JSON object with the campaigns file's keys
--               (see package bidder/campaign: adomain, product_group_id,
--               status, bid_cpm, creative, targeting...); "id" may be left
--               out, and when present must equal the row's id. Unknown keys
--               and bad values reject the row.
CREATE TABLE IF NOT EXISTS rtbd_campaigns (
    id         text        PRIMARY KEY,
    enabled    boolean     NOT NULL DEFAULT true,
    updated_at timestamptz NOT NULL DEFAULT now(),
    spec       jsonb       NOT NULL
);

-- Every change NOTIFYs channel rtbd_campaigns, after its commit: bidders
-- LISTENing on it read the table at once instead of at their next refresh.
CREATE OR REPLACE FUNCTION rtbd_campaigns_notify() RETURNS trigger
    LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('rtbd_campaigns', '');
    RETURN NULL;
END
$$;
DROP TRIGGER IF EXISTS rtbd_campaigns_notify ON rtbd_campaigns;
CREATE TRIGGER rtbd_campaigns_notify
    AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON rtbd_campaigns
    FOR EACH STATEMENT EXECUTE FUNCTION rtbd_campaigns_notify();
