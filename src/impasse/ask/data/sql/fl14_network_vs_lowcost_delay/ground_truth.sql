SELECT month, CASE WHEN carrier IN ('AA','DL','UA','US') THEN 'network' ELSE 'low-cost' END AS grp, ROUND(AVG(arr_delay), 2) AS avg_delay
FROM flights WHERE (carrier IN ('AA','DL','UA','US') OR carrier IN ('B6','F9','FL','WN','VX')) AND arr_delay IS NOT NULL GROUP BY 1, 2
